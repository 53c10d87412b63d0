import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Opens (creating it and its folder when missing) a SQLite file that several processes of one machine
 * share: write-ahead logging, and a writer that waits up to `busyTimeoutMs` for another's lock
 * instead of failing at once. `:memory:` opens a private database.
 */
export function openSqliteFile(input: { path: string; busyTimeoutMs: number }): Database.Database {
  if (input.path !== ':memory:') mkdirSync(dirname(input.path), { recursive: true });
  const database = new Database(input.path);
  database.pragma('journal_mode = WAL');
  database.pragma(`busy_timeout = ${Math.trunc(input.busyTimeoutMs)}`);
  return database;
}
