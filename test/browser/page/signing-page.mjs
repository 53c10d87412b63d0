// The test page's entry: puts the approvals console's browser modules (src/console/assets/)
// where page.evaluate can reach them.
import { canonicalJson, sha256Hex } from './canonical-json.mjs';
import {
  decisionText,
  generateSigningKey,
  loadSigningKey,
  publicKeyHex,
  saveSigningKey,
  signDecision,
} from './signing-keys.mjs';

globalThis.toolgateSigning = {
  canonicalJson,
  sha256Hex,
  decisionText,
  generateSigningKey,
  publicKeyHex,
  signDecision,
  saveSigningKey,
  loadSigningKey,
};
