// The instants a mining window is given in: a calendar date (midnight UTC), an ISO 8601 date and time
// with its zone, or a duration before now (`7d`, `24h`, `90m`). A time without a zone is refused: the
// same text means other instants on other machines.

/** What `toolgate mine` refuses its arguments with, before it reads anything or writes a file. */
export const miningUsageCodes = [
  'INVALID_DATE',
  'INVALID_LIMIT',
  'OUTPUT_EXISTS',
  'OUTPUT_UNWRITABLE',
  'AUDIT_STORE_MISSING',
] as const;

/** A reason `toolgate mine` refused its arguments. */
export type MiningUsageCode = (typeof miningUsageCodes)[number];

const relativeUnits: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The forms an instant may take, for messages. */
export const instantForms =
  '2025-01-31 (midnight UTC), 2025-01-31T14:00:00Z or +01:00, or a duration before now: 90m, 24h, 7d, 2w';

/** Parses an instant of a mining window (see {@link instantForms}); `now` anchors a duration. */
export function parseMiningInstant(input: {
  text: string;
  now: Date;
}): { ok: true; instant: Date } | { ok: false; message: string } {
  const text = input.text.trim();
  const relative = /^(\d{1,6})(m|h|d|w)$/.exec(text);
  if (relative) {
    return {
      ok: true,
      instant: new Date(input.now.getTime() - Number(relative[1]) * relativeUnits[relative[2]!]!),
    };
  }
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (date) {
    const instant = new Date(`${text}T00:00:00Z`);
    // 2025-02-30 matches the pattern; the round trip does not.
    if (!Number.isNaN(instant.getTime()) && instant.toISOString().startsWith(text))
      return { ok: true, instant };
    return { ok: false, message: `"${input.text}" is not a calendar date` };
  }
  const dateTime = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/i.exec(text);
  if (dateTime) {
    if (dateTime[4] === undefined) {
      return {
        ok: false,
        message: `"${input.text}" has no time zone; add Z (UTC) or an offset such as +01:00`,
      };
    }
    const instant = new Date(text);
    const day = new Date(`${dateTime[1]}T00:00:00Z`);
    if (
      !Number.isNaN(instant.getTime()) &&
      !Number.isNaN(day.getTime()) &&
      day.toISOString().startsWith(dateTime[1]!)
    ) {
      return { ok: true, instant };
    }
  }
  return { ok: false, message: `"${input.text}" is not a date` };
}

/**
 * The window `--since` and `--until` name (`until` defaults to `now`), or what is wrong with it, as
 * a sentence for the user: `toolgate mine` and `toolgate report` read the audit store over one.
 */
export function parseAuditWindow(input: {
  since: string;
  until: string | undefined;
  now: Date;
}): { ok: true; since: Date; until: Date } | { ok: false; message: string } {
  const since = parseMiningInstant({ text: input.since, now: input.now });
  if (!since.ok) return { ok: false, message: `--since ${since.message}; write ${instantForms}` };
  const until =
    input.until !== undefined ? parseMiningInstant({ text: input.until, now: input.now }) : undefined;
  if (until && !until.ok) return { ok: false, message: `--until ${until.message}; write ${instantForms}` };
  const untilInstant = until?.ok ? until.instant : input.now;
  if (since.instant.getTime() >= untilInstant.getTime()) {
    return {
      ok: false,
      message: `--since (${since.instant.toISOString()}) must be before --until (${untilInstant.toISOString()})`,
    };
  }
  return { ok: true, since: since.instant, until: untilInstant };
}
