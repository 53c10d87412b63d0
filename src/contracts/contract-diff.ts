// Compares two contract snapshots and says, per difference, what changed (tool, path, before → after)
// and whether it breaks the model, is compatible, or changes behaviour (the selection suite must run).
// Pure: no I/O.
//
// The input is what the model writes and the output what it reads, so the rules turn around between
// them: a narrower input (a tighter bound, an enum value gone) refuses calls that passed, while a
// wider output (an enum value never seen, a field that may be missing) surprises the reader.
import { canonicalJson } from '../shared/canonical-json';
import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import type {
  ContractSnapshot,
  ExampleObservation,
  FieldContract,
  FieldMap,
  ToolSnapshot,
} from './contract-snapshot';
import {
  compareText,
  describedParts,
  joinPath,
  parentPath,
  rootPath,
  sameJson,
  withoutDescriptions,
} from './contract-snapshot';

/** How much a change matters: `breaking` fails the check; `behavioural` asks for the selection suite. */
export const contractVerdicts = ['breaking', 'compatible', 'behavioural'] as const;

/** The class of one change. */
export type ContractVerdict = (typeof contractVerdicts)[number];

/** What changed, as a stable code; the verdict depends on the kind and on the side (input or output). */
export const contractChangeKinds = [
  'TOOL_REMOVED',
  'TOOL_ADDED',
  'DESCRIPTION_CHANGED',
  'FIELD_REMOVED',
  'FIELD_ADDED',
  'FIELD_NOW_REQUIRED',
  'FIELD_NOW_OPTIONAL',
  'BRANCH_REMOVED',
  'BRANCH_ADDED',
  'TYPE_CHANGED',
  'ENUM_VALUE_REMOVED',
  'ENUM_VALUE_ADDED',
  'CONSTRAINT_TIGHTENED',
  'CONSTRAINT_LOOSENED',
  'CONSTRAINT_CHANGED',
  'DEFAULT_CHANGED',
  'DOMAIN_CODE_REMOVED',
  'DOMAIN_CODE_ADDED',
  'DOMAIN_CODE_MEANING_CHANGED',
  'EFFECT_LOWERED',
  'EFFECT_RAISED',
  'RISK_LOWERED',
  'RISK_RAISED',
  'AMOUNT_LOWERED',
  'AMOUNT_RAISED',
  'EXAMPLE_REMOVED',
  'EXAMPLE_ADDED',
  'IDEMPOTENCY_FIELDS_CHANGED',
  'BOUND_PARAMETER_ADDED',
  'BOUND_PARAMETER_REMOVED',
  'BOUND_PARAMETER_SOURCE_CHANGED',
  'UNTRUSTED_OUTPUT_WIDENED',
  'UNTRUSTED_OUTPUT_NARROWED',
] as const;

/** A kind of contract change. */
export type ContractChangeKind = (typeof contractChangeKinds)[number];

/** One difference between two snapshots, with where it is and what it was and is. */
export interface ContractChange {
  verdict: ContractVerdict;
  kind: ContractChangeKind;
  tool: string;
  /**
   * Where, in the tool: `''` for the tool itself, `description`, `effect`, `idempotencyFields`,
   * `domainCodes.<CODE>`, `examples[<index>]`, or a field: `input.amount_cents`, `output.items[].sku`,
   * `input.target(kind="order").amount` inside a union's branch, `input["$"]` for an odd name,
   * `output` for the output's root.
   */
  path: string;
  /** For a field: what about it changed (`type`, `required`, `enum`, `minimum`, `pattern`, `description`...). */
  aspect?: string;
  /** The value before and after, as JSON; absent where there was none. */
  before?: unknown;
  after?: unknown;
  /** What changed and what it means, for a person. */
  message: string;
}

/** Every difference between two snapshots, classified. */
export interface ContractDiff {
  /** False when any change is breaking. */
  ok: boolean;
  /** The weightiest class present: breaking, then behavioural, then compatible. */
  verdict: ContractVerdict | 'unchanged';
  counts: Record<ContractVerdict, number>;
  /** True when a description changed or a tool was added: the selection suite must run. */
  selectionSuiteMustRun: boolean;
  /** Breaking first, then compatible, then behavioural; by tool and path within each. */
  changes: ContractChange[];
}

type Side = 'input' | 'output';

/**
 * Compares a committed snapshot (`before`) with one of the current tools (`after`) and classifies
 * every difference; key order, field order and enum order never count. Pure.
 */
export function diffSnapshots(before: ContractSnapshot, after: ContractSnapshot): ContractDiff {
  const changes: ContractChange[] = [];
  const afterByName = new Map(after.tools.map((tool) => [tool.name, tool]));
  const beforeNames = new Set(before.tools.map((tool) => tool.name));
  for (const old of before.tools) {
    const current = afterByName.get(old.name);
    if (current) changes.push(...diffTool(old, current));
    else {
      changes.push({
        verdict: 'breaking',
        kind: 'TOOL_REMOVED',
        tool: old.name,
        path: '',
        before: old.name,
        message: `tool removed: a model, policy or client that names "${old.name}" now gets UNKNOWN_TOOL`,
      });
    }
  }
  for (const current of after.tools) {
    if (beforeNames.has(current.name)) continue;
    changes.push({
      verdict: 'behavioural',
      kind: 'TOOL_ADDED',
      tool: current.name,
      path: '',
      after: current.name,
      message: 'tool added: the model may now pick it instead of another; run the selection suite',
    });
  }
  const rank = (verdict: ContractVerdict): number => contractVerdicts.indexOf(verdict);
  // A stable sort: within one tool and path, changes stay in the order the rules found them.
  changes.sort(
    (a, b) => rank(a.verdict) - rank(b.verdict) || compareText(a.tool, b.tool) || compareText(a.path, b.path),
  );
  const counts = { breaking: 0, compatible: 0, behavioural: 0 };
  for (const change of changes) counts[change.verdict]++;
  return {
    ok: counts.breaking === 0,
    verdict: counts.breaking
      ? 'breaking'
      : counts.behavioural
        ? 'behavioural'
        : counts.compatible
          ? 'compatible'
          : 'unchanged',
    counts,
    selectionSuiteMustRun: counts.behavioural > 0,
    changes,
  };
}

function diffTool(before: ToolSnapshot, after: ToolSnapshot): ContractChange[] {
  // Most tools did not change: one walk says so, before any rule runs.
  if (sameJson(before, after)) return [];
  const tool = before.name;
  const changes: ContractChange[] = [];
  if (before.description !== after.description) {
    changes.push({
      verdict: 'behavioural',
      kind: 'DESCRIPTION_CHANGED',
      tool,
      path: 'description',
      before: before.description,
      after: after.description,
      message: 'description changed: the model chooses tools by it; run the selection suite',
    });
  }
  if (before.effect !== after.effect) {
    const lowered = after.effect === 'read';
    changes.push({
      verdict: lowered ? 'breaking' : 'compatible',
      kind: lowered ? 'EFFECT_LOWERED' : 'EFFECT_RAISED',
      tool,
      path: 'effect',
      before: before.effect,
      after: after.effect,
      message: lowered
        ? 'effect lowered from write to read: its calls now skip risk, approval, credentials and verification'
        : 'effect raised from read to write: its calls now go through risk, approval and credentials',
    });
  }
  changes.push(...diffDomainCodes({ tool, before: before.domainCodes, after: after.domainCodes }));
  if (!sameJson(before.idempotencyFields, after.idempotencyFields)) {
    changes.push({
      verdict: 'breaking',
      kind: 'IDEMPOTENCY_FIELDS_CHANGED',
      tool,
      path: 'idempotencyFields',
      before: before.idempotencyFields ?? 'every argument',
      after: after.idempotencyFields ?? 'every argument',
      message:
        'idempotency fields changed: call ids change, so a call proposed again across the deploy is a new call ' +
        'and its effect may apply twice',
    });
  }
  changes.push(
    ...diffBoundParameters({ tool, before: before.boundParameters, after: after.boundParameters }),
  );
  changes.push(
    ...diffUntrustedOutput({ tool, before: before.untrustedOutput, after: after.untrustedOutput }),
  );
  changes.push(...diffFields({ tool, side: 'input', before: before.input, after: after.input }));
  changes.push(...diffFields({ tool, side: 'output', before: before.output, after: after.output }));
  changes.push(...diffExamples({ tool, before, after }));
  return changes;
}

/**
 * A bound parameter is a trust boundary: the host fills it, the model never sees it. Unbinding one
 * lets the model choose (for example) the end user; binding one or changing its source changes
 * which calls the same proposal makes, and its call id. Every change is breaking.
 */
function diffBoundParameters(input: {
  tool: string;
  before: Record<string, string> | undefined;
  after: Record<string, string> | undefined;
}): ContractChange[] {
  const { tool } = input;
  const before = new Map(Object.entries(input.before ?? {}));
  const after = new Map(Object.entries(input.after ?? {}));
  const changes: ContractChange[] = [];
  for (const [field, source] of before) {
    const path = `boundParameters.${field}`;
    const now = after.get(field);
    if (now === undefined) {
      changes.push({
        verdict: 'breaking',
        kind: 'BOUND_PARAMETER_REMOVED',
        tool,
        path,
        before: source,
        message:
          `${field} is no longer filled from context.${source}: the model now chooses it, so a call can act ` +
          'for someone other than the conversation’s end user; call ids change',
      });
    } else if (now !== source) {
      changes.push({
        verdict: 'breaking',
        kind: 'BOUND_PARAMETER_SOURCE_CHANGED',
        tool,
        path,
        before: source,
        after: now,
        message: `${field} is filled from context.${now} instead of context.${source}: the same conversation's calls change, and their call ids`,
      });
    }
  }
  for (const [field, source] of after) {
    if (before.has(field)) continue;
    changes.push({
      verdict: 'breaking',
      kind: 'BOUND_PARAMETER_ADDED',
      tool,
      path: `boundParameters.${field}`,
      after: source,
      message:
        `${field} is now filled from context.${source}: a model that sends it is refused (BOUND_PARAMETER_SENT), ` +
        'a call whose context lacks it is refused when the field is required (CONTEXT_REQUIRED), and call ids change',
    });
  }
  return changes;
}

/**
 * Untrusted output marks what the taint rule counts: more of it asks for approval more often
 * (compatible); less of it lets a session that read text planted there write unattended (breaking).
 */
function diffUntrustedOutput(input: {
  tool: string;
  before: true | string[] | undefined;
  after: true | string[] | undefined;
}): ContractChange[] {
  const { tool, before, after } = input;
  if (sameJson(before, after)) return [];
  const covers = (marked: true | string[] | undefined, field: string): boolean =>
    marked === true || (marked !== undefined && marked.includes(field));
  const narrowed =
    (before === true && after !== true) ||
    (Array.isArray(before) && before.some((field) => !covers(after, field)));
  const shown = (marked: true | string[] | undefined): unknown =>
    marked === true ? 'the whole output' : (marked ?? 'nothing');
  return [
    narrowed
      ? {
          verdict: 'breaking',
          kind: 'UNTRUSTED_OUTPUT_NARROWED',
          tool,
          path: 'untrustedOutput',
          before: shown(before),
          after: shown(after),
          message:
            'less of the output counts as untrusted text: a session that reads text planted there no longer ' +
            'falls under the untrusted-text rule, and may write unattended',
        }
      : {
          verdict: 'compatible',
          kind: 'UNTRUSTED_OUTPUT_WIDENED',
          tool,
          path: 'untrustedOutput',
          before: shown(before),
          after: shown(after),
          message:
            'more of the output counts as untrusted text: sessions that read it fall under the untrusted-text rule',
        },
  ];
}

function diffDomainCodes(input: {
  tool: string;
  before: Record<string, string>;
  after: Record<string, string>;
}): ContractChange[] {
  const { tool, before, after } = input;
  const changes: ContractChange[] = [];
  const removed = Object.keys(before).filter((code) => !Object.hasOwn(after, code));
  const added = Object.keys(after).filter((code) => !Object.hasOwn(before, code));
  for (const code of removed) {
    const renamed = added.filter((candidate) => after[candidate] === before[code]);
    changes.push({
      verdict: 'breaking',
      kind: 'DOMAIN_CODE_REMOVED',
      tool,
      path: `domainCodes.${code}`,
      before: before[code],
      message:
        `domain code ${code} removed${renamed.length ? ` (renamed to ${renamed.join(' or ')}?)` : ''}: ` +
        'code and dashboards that handle it never see it again',
    });
  }
  for (const code of added) {
    const renamed = removed.filter((candidate) => before[candidate] === after[code]);
    changes.push({
      verdict: 'compatible',
      kind: 'DOMAIN_CODE_ADDED',
      tool,
      path: `domainCodes.${code}`,
      after: after[code],
      message: `domain code ${code} added${renamed.length ? ` (renamed from ${renamed.join(' or ')}?)` : ''}`,
    });
  }
  for (const code of Object.keys(before)) {
    if (!Object.hasOwn(after, code) || before[code] === after[code]) continue;
    changes.push({
      verdict: 'compatible',
      kind: 'DOMAIN_CODE_MEANING_CHANGED',
      tool,
      path: `domainCodes.${code}`,
      before: before[code],
      after: after[code],
      message: `the meaning of domain code ${code} changed`,
    });
  }
  return changes;
}

function diffExamples(input: { tool: string; before: ToolSnapshot; after: ToolSnapshot }): ContractChange[] {
  const { tool } = input;
  const changes: ContractChange[] = [];
  const keyed = (snapshot: ToolSnapshot) =>
    new Map(
      snapshot.examples.map((example, index) => [canonicalJson(example.arguments), { example, index }]),
    );
  const before = keyed(input.before);
  const after = keyed(input.after);
  for (const [key, { example, index }] of after) {
    const old = before.get(key);
    if (!old) {
      changes.push({
        verdict: 'compatible',
        kind: 'EXAMPLE_ADDED',
        tool,
        path: `examples[${index}]`,
        after: example,
        message: `example ${key} added (risk ${example.risk})`,
      });
      continue;
    }
    const amountChange = diffAmount({ tool, key, index, before: old.example, after: example });
    if (amountChange) changes.push(amountChange);
    if (old.example.risk === example.risk) continue;
    const lowered = riskRank(example.risk) < riskRank(old.example.risk);
    changes.push({
      verdict: lowered ? 'breaking' : 'compatible',
      kind: lowered ? 'RISK_LOWERED' : 'RISK_RAISED',
      tool,
      path: `examples[${index}]`,
      aspect: 'risk',
      before: old.example.risk,
      after: example.risk,
      message: lowered
        ? `risk level of example ${key} lowered: calls like it now need less approval (${riskChange(old.example.risk, example.risk)})`
        : `risk level of example ${key} raised: calls like it now need more approval (${riskChange(old.example.risk, example.risk)})`,
    });
  }
  for (const [key, { example, index }] of before) {
    if (after.has(key)) continue;
    changes.push({
      verdict: 'compatible',
      kind: 'EXAMPLE_REMOVED',
      tool,
      path: `examples[${index}]`,
      before: example,
      message: `example ${key} removed: its risk level (${example.risk}) is no longer watched`,
    });
  }
  return changes;
}

/**
 * The amount the tool's amount function gives one example, before and after (absent when the tool
 * declares none). The policy's amount limits count it across sessions: a lower amount, or none, lets
 * calls through that a limit stopped (breaking, as a lowered risk level); a higher one, or a new
 * amount function, only makes limits stricter.
 */
function diffAmount(input: {
  tool: string;
  key: string;
  index: number;
  before: ExampleObservation;
  after: ExampleObservation;
}): ContractChange | undefined {
  const { tool, key, index } = input;
  const before = input.before.amount;
  const after = input.after.amount;
  if (before === after) return undefined;
  const lowered = after === undefined || (before !== undefined && after < before);
  const change = {
    verdict: lowered ? 'breaking' : 'compatible',
    kind: lowered ? 'AMOUNT_LOWERED' : 'AMOUNT_RAISED',
    tool,
    path: `examples[${index}]`,
    aspect: 'amount',
    ...(before === undefined ? {} : { before }),
    ...(after === undefined ? {} : { after }),
  } as const;
  if (after === undefined) {
    return {
      ...change,
      message: `amount of example ${key} no longer counted: the tool declares no amount, so the policy's amount limits stop counting calls like it`,
    };
  }
  if (before === undefined) {
    return {
      ...change,
      message: `amount of example ${key} now counted (${after}): the policy's amount limits count calls like it`,
    };
  }
  return {
    ...change,
    message: lowered
      ? `amount of example ${key} lowered: the policy's amount limits now count less for calls like it (${before} → ${after})`
      : `amount of example ${key} raised: the policy's amount limits now count more for calls like it (${before} → ${after})`,
  };
}

function riskChange(before: RiskLevel, after: RiskLevel): string {
  return `${before} → ${after}`;
}

// --- Fields ----------------------------------------------------------------------------------------

interface FieldScope {
  tool: string;
  side: Side;
  /** The change's path: `input.amount_cents`. */
  at: string;
  /** How the field is named in a sentence: `input field "amount_cents"`. */
  name: string;
}

/** The verdict of a change that lets more values through: fine for what the model writes, not for what it reads. */
function widened(side: Side): ContractVerdict {
  return side === 'input' ? 'compatible' : 'breaking';
}

/** The verdict of a change that lets fewer values through. */
function narrowed(side: Side): ContractVerdict {
  return side === 'input' ? 'breaking' : 'compatible';
}

function diffFields(input: {
  tool: string;
  side: Side;
  before: FieldMap;
  after: FieldMap;
}): ContractChange[] {
  const { tool, side, before, after } = input;
  const changes: ContractChange[] = [];
  const scope = (path: string): FieldScope => ({
    tool,
    side,
    at: path === rootPath ? side : joinPath(side, path),
    name: path === rootPath ? `the ${side}` : `${side} field "${path}"`,
  });
  const removed = Object.keys(before).filter((path) => !Object.hasOwn(after, path));
  const added = Object.keys(after).filter((path) => !Object.hasOwn(before, path));
  const removedSet = new Set(removed);
  const addedSet = new Set(added);
  // Only the outermost field that appeared or went: its own fields went with it.
  const removedTop = removed.filter((path) => !removedSet.has(parentPath(path)));
  const addedTop = added.filter((path) => !addedSet.has(parentPath(path)));
  const sameLevelAndType = (path: string, others: string[], own: FieldMap, other: FieldMap) =>
    others.filter(
      (candidate) =>
        !isBranch(candidate) &&
        parentPath(candidate) === parentPath(path) &&
        sameJson(other[candidate]?.type, own[path]?.type),
    );
  for (const path of removedTop.filter(isBranch)) {
    const field = scope(path);
    changes.push({
      verdict: narrowed(side),
      kind: 'BRANCH_REMOVED',
      tool,
      path: field.at,
      before: withoutDescriptions(before[path]!),
      message:
        `${side} union branch "${path}" removed: ` +
        (side === 'input'
          ? 'calls that send that kind are now refused'
          : 'the tool no longer returns that kind'),
    });
  }
  for (const path of addedTop.filter(isBranch)) {
    const field = scope(path);
    changes.push({
      verdict: widened(side),
      kind: 'BRANCH_ADDED',
      tool,
      path: field.at,
      after: withoutDescriptions(after[path]!),
      message:
        `new ${side} union branch "${path}"` +
        (side === 'input'
          ? ''
          : ': the tool may now return a kind a model or client told the old ones does not expect'),
    });
  }
  for (const path of removedTop.filter((candidate) => !isBranch(candidate))) {
    const field = scope(path);
    const renamed = sameLevelAndType(path, addedTop, before, after);
    changes.push({
      verdict: 'breaking',
      kind: 'FIELD_REMOVED',
      tool,
      path: field.at,
      before: withoutDescriptions(before[path]!),
      message:
        `${field.name} removed${renamed.length ? ` (renamed to ${renamed.map((name) => `"${name}"`).join(' or ')}?)` : ''}: ` +
        (side === 'input'
          ? 'calls that send it are now refused'
          : 'a model or client told to read it finds nothing there'),
    });
  }
  for (const path of addedTop.filter((candidate) => !isBranch(candidate))) {
    const field = scope(path);
    const current = after[path]!;
    const renamed = sameLevelAndType(path, removedTop, after, before);
    const hint = renamed.length ? ` (renamed from ${renamed.map((name) => `"${name}"`).join(' or ')}?)` : '';
    const required = side === 'input' && current.required;
    changes.push({
      verdict: required ? 'breaking' : 'compatible',
      kind: 'FIELD_ADDED',
      tool,
      path: field.at,
      after: withoutDescriptions(current),
      message: required
        ? `new required ${field.name}${hint}: calls that leave it out are now refused`
        : `new ${side === 'input' ? 'optional ' : ''}${field.name}${hint}`,
    });
  }
  for (const path of Object.keys(before)) {
    const current = after[path];
    if (current && !sameJson(before[path], current))
      changes.push(...diffField({ scope: scope(path), before: before[path]!, after: current }));
  }
  return changes;
}

/** Whether a path is a branch of a union told apart by a property: `target(kind="order")`. */
function isBranch(path: string): boolean {
  return path.endsWith(')');
}

function diffField(input: {
  scope: FieldScope;
  before: FieldContract;
  after: FieldContract;
}): ContractChange[] {
  const { scope, before, after } = input;
  const { side } = scope;
  const changes: ContractChange[] = [];
  const change = (
    fields: Pick<ContractChange, 'verdict' | 'kind' | 'aspect' | 'before' | 'after'> & { message: string },
  ): void => {
    changes.push({
      ...fields,
      tool: scope.tool,
      path: scope.at,
      message: `${scope.name}: ${fields.message}`,
    });
  };

  if (before.required !== after.required) {
    const nowRequired = after.required;
    change({
      verdict: nowRequired ? narrowed(side) : widened(side),
      kind: nowRequired ? 'FIELD_NOW_REQUIRED' : 'FIELD_NOW_OPTIONAL',
      aspect: 'required',
      before: before.required,
      after: after.required,
      message:
        side === 'input'
          ? nowRequired
            ? 'now required: calls that leave it out are now refused'
            : 'now optional'
          : nowRequired
            ? 'now always present'
            : 'may now be missing: a model or client told to read it may find nothing there',
    });
  }

  diffType({ before, after, side, change });
  diffEnum({ before, after, side, change });

  for (const aspect of ['pattern', 'format'] as const) {
    const old = before[aspect];
    const now = after[aspect];
    if (old === now) continue;
    if (old === undefined || now === undefined) {
      const tightened = old === undefined;
      change({
        verdict: tightened ? narrowed(side) : widened(side),
        kind: tightened ? 'CONSTRAINT_TIGHTENED' : 'CONSTRAINT_LOOSENED',
        aspect,
        before: old,
        after: now,
        message: tightened
          ? `${aspect} added${consequence(side, 'narrowed')}`
          : `${aspect} removed${consequence(side, 'widened')}`,
      });
    } else {
      // Whether one pattern accepts less than another cannot be told in general: any change counts.
      change({
        verdict: 'breaking',
        kind: 'CONSTRAINT_CHANGED',
        aspect,
        before: old,
        after: now,
        message: `${aspect} changed${side === 'input' ? ': values that passed before may now be refused' : ': the tool may now return values the old one never did'}`,
      });
    }
  }

  diffBounds({ before, after, side, change });

  if (before.uniqueItems !== after.uniqueItems && (before.uniqueItems || after.uniqueItems)) {
    const tightened = after.uniqueItems === true;
    change({
      verdict: tightened ? narrowed(side) : widened(side),
      kind: tightened ? 'CONSTRAINT_TIGHTENED' : 'CONSTRAINT_LOOSENED',
      aspect: 'uniqueItems',
      before: before.uniqueItems ?? false,
      after: after.uniqueItems ?? false,
      message: tightened
        ? `items must now be unique${consequence(side, 'narrowed')}`
        : `items may now repeat${consequence(side, 'widened')}`,
    });
  }

  if (
    before.additionalProperties !== undefined &&
    after.additionalProperties !== undefined &&
    before.additionalProperties !== after.additionalProperties
  ) {
    const closed = after.additionalProperties === false;
    // A reader ignores a field it does not know: for the output, opening or closing the object breaks nothing.
    change({
      verdict: side === 'output' ? 'compatible' : closed ? 'breaking' : 'compatible',
      kind: closed ? 'CONSTRAINT_TIGHTENED' : 'CONSTRAINT_LOOSENED',
      aspect: 'additionalProperties',
      before: before.additionalProperties,
      after: after.additionalProperties,
      message: closed
        ? `unknown fields are now refused${side === 'input' ? ': calls that send one are now refused' : ''}`
        : 'unknown fields are now accepted',
    });
  }

  if (!sameJson(before.default, after.default)) {
    // On the input, a default is what a call that leaves the field out means. Added, removed or
    // changed, it changes that meaning for every call that could leave the field out, so it breaks;
    // only a field no call could leave out before (it was required) has no such call to change.
    const omittable = side === 'input' && !before.required;
    const old = JSON.stringify(before.default);
    const now = JSON.stringify(after.default);
    change({
      verdict: omittable ? 'breaking' : 'compatible',
      kind: 'DEFAULT_CHANGED',
      aspect: 'default',
      before: before.default,
      after: after.default,
      message:
        before.default !== undefined && after.default !== undefined
          ? `default changed from ${old} to ${now}` +
            (omittable ? ': calls that leave the field out now mean something else' : '')
          : after.default === undefined
            ? `default ${old} removed` +
              (omittable
                ? `: calls that leave the field out no longer get ${old}; the tool now decides what a missing value means`
                : '')
            : `default ${now} added` +
              (omittable
                ? `: calls that leave the field out now get ${now} where the tool decided before ` +
                  `(harmless only if it already read a missing value as ${now})`
                : side === 'input'
                  ? ': no call could leave the field out before'
                  : ''),
    });
  }

  const keywords = new Set([...Object.keys(before.other ?? {}), ...Object.keys(after.other ?? {})]);
  for (const keyword of [...keywords].sort(compareText)) {
    const old = before.other?.[keyword];
    const now = after.other?.[keyword];
    if (sameJson(old, now)) continue;
    change({
      verdict: 'breaking',
      kind: 'CONSTRAINT_CHANGED',
      aspect: keyword,
      before: old,
      after: now,
      message: `"${keyword}" changed (a keyword the check cannot weigh, so it counts as breaking)`,
    });
  }

  if (side === 'input' && before.description !== after.description) {
    change({
      verdict: 'behavioural',
      kind: 'DESCRIPTION_CHANGED',
      aspect: 'description',
      before: before.description,
      after: after.description,
      message: 'description changed: the model fills the field by it; run the selection suite',
    });
  }
  if (side === 'input') diffInnerDescriptions({ before, after, change });
  return changes;
}

/**
 * Descriptions inside a union's branches (or another keyword's schemas) that stayed: the model reads
 * them as it reads a field's own. A branch that came or went is a type change, reported as such.
 */
function diffInnerDescriptions(input: {
  before: FieldContract;
  after: FieldContract;
  change: ChangeSink;
}): void {
  const now = describedParts(input.after);
  const old: Record<string, string> = {};
  const current: Record<string, string> = {};
  for (const [key, descriptions] of describedParts(input.before)) {
    const later = now.get(key);
    if (!later) continue;
    for (const at of new Set([...Object.keys(descriptions), ...Object.keys(later)])) {
      if (descriptions[at] === later[at]) continue;
      if (descriptions[at] !== undefined) old[at] = descriptions[at];
      if (later[at] !== undefined) current[at] = later[at];
    }
  }
  const where = [...new Set([...Object.keys(old), ...Object.keys(current)])].sort(compareText);
  if (!where.length) return;
  input.change({
    verdict: 'behavioural',
    kind: 'DESCRIPTION_CHANGED',
    aspect: 'description',
    before: old,
    after: current,
    message: `description changed inside it (${where.join(', ')}): the model fills the field by it; run the selection suite`,
  });
}

type ChangeSink = (
  fields: Pick<ContractChange, 'verdict' | 'kind' | 'aspect' | 'before' | 'after'> & { message: string },
) => void;

function consequence(side: Side, direction: 'narrowed' | 'widened'): string {
  if (side === 'input')
    return direction === 'narrowed' ? ': values that passed before may now be refused' : '';
  return direction === 'widened' ? ': the tool may now return values it never did' : '';
}

/** JSON types, `number` covering `integer`; no type is any type. */
function typeSet(field: FieldContract): Set<string> | undefined {
  if (field.type === undefined) return undefined;
  return new Set(typeof field.type === 'string' ? [field.type] : field.type);
}

/** Whether every value of type set `inner` is also of type set `outer`. */
function covers(outer: Set<string> | undefined, inner: Set<string> | undefined): boolean {
  if (outer === undefined) return true;
  if (inner === undefined) return false;
  return [...inner].every((type) => outer.has(type) || (type === 'integer' && outer.has('number')));
}

/** The field's type in words; `field` without descriptions (see `withoutDescriptions`). */
function typeText(field: Omit<FieldContract, 'description'>): string {
  if (field.unrepresentable) return `${field.unrepresentable} (a zod type JSON Schema cannot express)`;
  if (field.anyOf) return `anyOf ${canonicalJson(field.anyOf)}`;
  if (field.oneOf) return `oneOf ${canonicalJson(field.oneOf)}`;
  if (field.discriminator) return `an object of one of several kinds, told apart by "${field.discriminator}"`;
  if (field.type === undefined) return 'any';
  return typeof field.type === 'string' ? field.type : field.type.join(' | ');
}

function diffType(input: {
  before: FieldContract;
  after: FieldContract;
  side: Side;
  change: ChangeSink;
}): void {
  const { side, change } = input;
  // Descriptions inside union branches are the discovery contract's, compared apart.
  const before = withoutDescriptions(input.before);
  const after = withoutDescriptions(input.after);
  // A type JSON Schema cannot express says nothing about what it holds: any change from or to one breaks.
  if (before.unrepresentable !== after.unrepresentable) {
    change({
      verdict: 'breaking',
      kind: 'TYPE_CHANGED',
      aspect: 'type',
      before: before.unrepresentable ?? before.type,
      after: after.unrepresentable ?? after.type,
      message: `type changed from ${typeText(before)} to ${typeText(after)}`,
    });
    return;
  }
  if (before.discriminator !== after.discriminator) {
    change({
      verdict: 'breaking',
      kind: 'TYPE_CHANGED',
      aspect: 'discriminator',
      before: before.discriminator,
      after: after.discriminator,
      message: `type changed from ${typeText(before)} to ${typeText(after)}`,
    });
    return;
  }
  const oldBranches = before.anyOf ?? before.oneOf;
  const newBranches = after.anyOf ?? after.oneOf;
  if (oldBranches || newBranches) {
    if (
      sameJson(before.type, after.type) &&
      sameJson(before.anyOf, after.anyOf) &&
      sameJson(before.oneOf, after.oneOf)
    ) {
      return;
    }
    let verdict: ContractVerdict = 'breaking';
    if (oldBranches && newBranches && sameJson(before.type, after.type)) {
      // A union's branches are a set: more of them lets more through, fewer lets less. zod checks a
      // union by any branch, so a `oneOf` it wrote weighs as an `anyOf`.
      const old = new Set(oldBranches.map((branch) => canonicalJson(branch)));
      const now = new Set(newBranches.map((branch) => canonicalJson(branch)));
      const grew = [...old].every((branch) => now.has(branch));
      const shrank = [...now].every((branch) => old.has(branch));
      if (grew && shrank) verdict = 'compatible';
      else if (grew) verdict = widened(side);
      else if (shrank) verdict = narrowed(side);
    }
    change({
      verdict,
      kind: 'TYPE_CHANGED',
      aspect: 'type',
      before: { type: before.type, anyOf: before.anyOf, oneOf: before.oneOf },
      after: { type: after.type, anyOf: after.anyOf, oneOf: after.oneOf },
      message: `type changed from ${typeText(before)} to ${typeText(after)}`,
    });
    return;
  }
  const old = typeSet(before);
  const now = typeSet(after);
  if (sameJson(old ? [...old].sort(compareText) : undefined, now ? [...now].sort(compareText) : undefined)) {
    return;
  }
  const wider = covers(now, old);
  const narrower = covers(old, now);
  change({
    verdict: wider ? widened(side) : narrower ? narrowed(side) : 'breaking',
    kind: 'TYPE_CHANGED',
    aspect: 'type',
    before: before.type,
    after: after.type,
    message:
      `type ${wider ? 'widened' : narrower ? 'narrowed' : 'changed'} from ${typeText(before)} to ${typeText(after)}` +
      (wider ? consequence(side, 'widened') : consequence(side, 'narrowed')),
  });
}

function diffEnum(input: {
  before: FieldContract;
  after: FieldContract;
  side: Side;
  change: ChangeSink;
}): void {
  const { before, after, side, change } = input;
  if (!before.enum && !after.enum) return;
  if (!before.enum || !after.enum) {
    const restricted = after.enum !== undefined;
    change({
      verdict: restricted ? narrowed(side) : widened(side),
      kind: restricted ? 'CONSTRAINT_TIGHTENED' : 'CONSTRAINT_LOOSENED',
      aspect: 'enum',
      before: before.enum,
      after: after.enum,
      message: restricted
        ? `now limited to ${valuesText(after.enum!)}${consequence(side, 'narrowed')}`
        : `no longer limited to ${valuesText(before.enum!)}${consequence(side, 'widened')}`,
    });
    return;
  }
  const old = new Map(before.enum.map((value) => [canonicalJson(value), value]));
  const now = new Map(after.enum.map((value) => [canonicalJson(value), value]));
  const removed = [...old.keys()].filter((key) => !now.has(key)).map((key) => old.get(key));
  const added = [...now.keys()].filter((key) => !old.has(key)).map((key) => now.get(key));
  if (removed.length) {
    change({
      verdict: narrowed(side),
      kind: 'ENUM_VALUE_REMOVED',
      aspect: 'enum',
      before: before.enum,
      after: after.enum,
      message:
        `enum ${plural(removed, 'value')} ${valuesText(removed)} removed` +
        (side === 'input' ? ': calls that send it are now refused' : ': the tool no longer returns it'),
    });
  }
  if (added.length) {
    change({
      verdict: widened(side),
      kind: 'ENUM_VALUE_ADDED',
      aspect: 'enum',
      before: before.enum,
      after: after.enum,
      message:
        `enum ${plural(added, 'value')} ${valuesText(added)} added` +
        (side === 'input'
          ? ''
          : ': the tool may now return a value a model or client told the old ones does not expect'),
    });
  }
}

function plural(values: readonly unknown[], word: string): string {
  return values.length === 1 ? word : `${word}s`;
}

function valuesText(values: readonly unknown[]): string {
  return values.map((value) => JSON.stringify(value)).join(', ');
}

/** A lower or upper bound as the values it lets through, for comparison and for the message. */
interface Bound {
  value: number;
  exclusive: boolean;
}

function lowerBound(field: FieldContract): Bound | undefined {
  return strictest(
    [
      field.minimum !== undefined ? { value: field.minimum, exclusive: false } : undefined,
      field.exclusiveMinimum !== undefined ? { value: field.exclusiveMinimum, exclusive: true } : undefined,
    ],
    'lower',
    isIntegerOnly(field),
  );
}

function upperBound(field: FieldContract): Bound | undefined {
  return strictest(
    [
      field.maximum !== undefined ? { value: field.maximum, exclusive: false } : undefined,
      field.exclusiveMaximum !== undefined ? { value: field.exclusiveMaximum, exclusive: true } : undefined,
    ],
    'upper',
    isIntegerOnly(field),
  );
}

function isIntegerOnly(field: FieldContract): boolean {
  const types = typeSet(field);
  return types !== undefined && [...types].every((type) => type === 'integer' || type === 'null');
}

/** The tighter of a bound's two forms; for integers `> 0` is `>= 1`, so equivalent forms compare equal. */
function strictest(
  bounds: (Bound | undefined)[],
  end: 'lower' | 'upper',
  integers: boolean,
): Bound | undefined {
  let result: Bound | undefined;
  for (const bound of bounds) {
    if (!bound) continue;
    const normal = integers ? integerBound(bound, end) : bound;
    if (!result || tighter(normal, result, end)) result = normal;
  }
  return result;
}

function integerBound(bound: Bound, end: 'lower' | 'upper'): Bound {
  if (end === 'lower') {
    const value = bound.exclusive ? Math.floor(bound.value) + 1 : Math.ceil(bound.value);
    return { value, exclusive: false };
  }
  const value = bound.exclusive ? Math.ceil(bound.value) - 1 : Math.floor(bound.value);
  return { value, exclusive: false };
}

/** Whether bound `a` lets fewer values through than bound `b` at this end. */
function tighter(a: Bound, b: Bound, end: 'lower' | 'upper'): boolean {
  if (a.value !== b.value) return end === 'lower' ? a.value > b.value : a.value < b.value;
  return a.exclusive && !b.exclusive;
}

function boundText(bound: Bound | undefined, end: 'lower' | 'upper'): string {
  if (!bound) return 'none';
  return `${end === 'lower' ? '>' : '<'}${bound.exclusive ? '' : '='} ${bound.value}`;
}

/** Length and count limits: the larger minimum and the smaller maximum are the tighter. */
const countLimits = [
  ['minLength', 'lower'],
  ['maxLength', 'upper'],
  ['minItems', 'lower'],
  ['maxItems', 'upper'],
  ['minProperties', 'lower'],
  ['maxProperties', 'upper'],
] as const;

function diffBounds(input: {
  before: FieldContract;
  after: FieldContract;
  side: Side;
  change: ChangeSink;
}): void {
  const { before, after, side, change } = input;
  for (const [aspect, end, of] of [
    ['minimum', 'lower', lowerBound],
    ['maximum', 'upper', upperBound],
  ] as const) {
    const old = of(before);
    const now = of(after);
    if (sameJson(old, now)) continue;
    const tightened = old === undefined || (now !== undefined && tighter(now, old, end));
    reportLimit({
      change,
      side,
      aspect,
      tightened,
      before: boundText(old, end),
      after: boundText(now, end),
      what: end === 'lower' ? 'lower bound' : 'upper bound',
    });
  }
  for (const [aspect, end] of countLimits) {
    const old = before[aspect];
    const now = after[aspect];
    // No minimum is a minimum of 0; no maximum is none.
    const oldValue = old ?? (end === 'lower' ? 0 : Infinity);
    const nowValue = now ?? (end === 'lower' ? 0 : Infinity);
    if (oldValue === nowValue) continue;
    reportLimit({
      change,
      side,
      aspect,
      tightened: end === 'lower' ? nowValue > oldValue : nowValue < oldValue,
      before: old ?? 'none',
      after: now ?? 'none',
      what: aspect,
    });
  }
  const old = before.multipleOf;
  const now = after.multipleOf;
  if (old !== now) {
    // A multiple of 10 is a multiple of 5: from 5 to 10 tightens, from 10 to 5 loosens, 5 to 3 does neither.
    const tightened = old === undefined || (now !== undefined && isWholeMultiple(now, old));
    const loosened = now === undefined || (old !== undefined && isWholeMultiple(old, now));
    if (tightened || loosened) {
      reportLimit({
        change,
        side,
        aspect: 'multipleOf',
        tightened,
        before: old ?? 'none',
        after: now ?? 'none',
        what: 'multipleOf',
      });
    } else {
      change({
        verdict: 'breaking',
        kind: 'CONSTRAINT_CHANGED',
        aspect: 'multipleOf',
        before: old,
        after: now,
        message: `multipleOf changed from ${old} to ${now}`,
      });
    }
  }
}

function reportLimit(input: {
  change: ChangeSink;
  side: Side;
  aspect: string;
  tightened: boolean;
  before: string | number;
  after: string | number;
  what: string;
}): void {
  const { side, tightened } = input;
  input.change({
    verdict: tightened ? narrowed(side) : widened(side),
    kind: tightened ? 'CONSTRAINT_TIGHTENED' : 'CONSTRAINT_LOOSENED',
    aspect: input.aspect,
    before: input.before,
    after: input.after,
    message:
      `${input.what} ${tightened ? 'tightened' : 'loosened'} from ${input.before} to ${input.after}` +
      consequence(side, tightened ? 'narrowed' : 'widened'),
  });
}

/**
 * Whether `value` is a whole multiple of `step` as the numbers are written in decimal (0.3 is three
 * times 0.1), not as binary floating point divides them (0.3 / 0.1 is 2.9999999999999996).
 */
function isWholeMultiple(value: number, step: number): boolean {
  const a = decimalOf(value);
  const b = decimalOf(step);
  if (!a || !b || b.digits === 0n) return Number.isInteger(value / step);
  const exponent = Math.min(a.exponent, b.exponent);
  const scaledValue = a.digits * 10n ** BigInt(a.exponent - exponent);
  const scaledStep = b.digits * 10n ** BigInt(b.exponent - exponent);
  return scaledValue % scaledStep === 0n;
}

/** A finite number as digits times a power of ten, from its shortest decimal form (`0.3` is 3 × 10^-1). */
function decimalOf(value: number): { digits: bigint; exponent: number } | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(value));
  if (!match) return undefined;
  const fraction = match[3] ?? '';
  return {
    digits: BigInt(`${match[1]}${match[2]}${fraction}`),
    exponent: Number(match[4] ?? 0) - fraction.length,
  };
}
