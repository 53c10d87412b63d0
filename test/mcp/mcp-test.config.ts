// The MCP CLI tests' config: the CLI tests' own (the running harness's policy and keys), with the MCP
// tokens file of the test, passed through the environment since a config is a module.
import { defineConfig } from 'toolgate';
import base from '../support/test-toolgate.config';

export default defineConfig({
  ...base,
  mcp: { tokensPath: process.env.TOOLGATE_TEST_MCP_TOKENS ?? 'missing-test-mcp-tokens.json' },
});
