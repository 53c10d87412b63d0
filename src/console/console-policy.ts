import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { createPublicKey } from 'node:crypto';
import { publicKeyHex } from '../keys/key-files';
import type { ApproverView, LoadedPolicy } from '../policy/load-policy';
import { ConfigurationError } from '../policy/load-policy';
import { policyFileSchema } from '../policy/policy-schema';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { nameRecord } from '../shared/own-records';

/*
 * The policy as the approvals console needs it: who the approvers are (their grants, the callers they
 * operate), the operators' public keys (an enrolled key's chain must hold at sign-in), and the
 * callers and tools (the queue's filters). Nothing that can sign: a console run as its own process
 * reads one policy file and, at most, the public key files it names next to it.
 */

/** What the console reads of a policy; a worker's `LoadedPolicy` is one. */
export type ConsolePolicy = Pick<LoadedPolicy, 'version' | 'file' | 'approvers' | 'operators'>;

/**
 * Reads a policy file for a console running on its own: the workers' policy format, each approver's
 * and operator's key inline (`ed25519:<hex>`) or a `.pub` file (a PEM public key) relative to the
 * policy's folder. Callers' keys are not read (the console verifies no proposal). A private key, a
 * file that is not a public key, or a bad policy throws a `ConfigurationError` naming the field and
 * the fix. It checks no tool names against contracts: the console loads no tools.
 */
export function loadConsolePolicy(input: { path: string }): ConsolePolicy {
  const source = resolve(input.path);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(source, 'utf8'));
  } catch (error) {
    throw new ConfigurationError(
      `console policy ${source}: cannot be read as JSON (${(error as Error).message}); check --policy`,
    );
  }
  const parsed = policyFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`,
    );
    throw new ConfigurationError(`console policy ${source}: ${problems.join('; ')}`);
  }
  const file = parsed.data;
  const problems: string[] = [];
  const keyOf = (field: string, reference: string): string => {
    const inline = /^ed25519:([0-9a-f]{64})$/i.exec(reference);
    if (inline?.[1]) return inline[1].toLowerCase();
    if (!reference.endsWith('.pub')) {
      problems.push(
        `${field}: "${reference}" is neither "ed25519:<hex>" nor a .pub file; the console takes public keys only`,
      );
      return '';
    }
    const path = isAbsolute(reference) ? reference : resolve(dirname(source), reference);
    try {
      const text = readFileSync(path, 'utf8');
      if (!/^-----BEGIN PUBLIC KEY-----/m.test(text) || /PRIVATE KEY/.test(text)) {
        problems.push(`${field}: ${path} is not a PEM public key; the console takes public keys only`);
        return '';
      }
      return publicKeyHex(createPublicKey(text));
    } catch (error) {
      problems.push(`${field}: cannot read an Ed25519 public key from ${path} (${(error as Error).message})`);
      return '';
    }
  };
  const approvers = nameRecord<ApproverView>();
  for (const [name, approver] of Object.entries(file.approvers)) {
    approvers[name] = {
      publicKeyHex: keyOf(`approvers.${name}.publicKey`, approver.publicKey),
      maxLevel: approver.maxLevel,
      operates: approver.operates,
    };
  }
  const operators = nameRecord<string>();
  for (const [name, operator] of Object.entries(file.operators)) {
    operators[name] = keyOf(`operators.${name}.publicKey`, operator.publicKey);
  }
  if (problems.length) throw new ConfigurationError(`console policy ${source}: ${problems.join('; ')}`);
  const digest = sha256Hex(canonicalJson({ file, approvers, operators }));
  return { version: `${file.version ?? 'unversioned'}@${digest.slice(0, 12)}`, file, approvers, operators };
}
