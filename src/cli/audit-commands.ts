import type { Command } from 'commander';
import { auditUrlVariable } from '../audit/open-audit-store';
import { initPostgresAuditStore } from '../audit/postgres-audit-store';
import type { CliContext, GlobalOptions } from './cli-context';
import { commandAction } from './cli-context';

/** The owner's URL of a PostgreSQL audit store: read from the environment only, never a flag (a process list shows flags). */
export const auditOwnerUrlVariable = 'TOOLGATE_AUDIT_OWNER_URL';

type AuditInitOptions = GlobalOptions & { writer?: string[] };

/** Adds `audit init`: the one-shot set-up of a PostgreSQL audit store by the owner of its tables. */
export function addAuditCommands(program: Command, context: CliContext): void {
  const audit = program.command('audit').description('set up the audit store');
  audit
    .command('init')
    .description(
      `create a PostgreSQL audit store's tables and guards as their owner (${auditOwnerUrlVariable}) and let ` +
        `the writer roles insert and read only: run it once per deploy, before the workers`,
    )
    .option(
      '--writer <role>',
      `a role the toolgate processes connect as (repeatable; default: the user of ${auditUrlVariable})`,
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(
      commandAction(context, async (_options: unknown, command: Command) => {
        const options = command.optsWithGlobals<AuditInitOptions>();
        const refuse = (message: string): number => {
          context.output.error(`AUDIT_INIT_REFUSED: ${message}`);
          return 2;
        };
        const url = process.env[auditOwnerUrlVariable]?.trim();
        if (!url || !/^postgres(ql)?:\/\//.test(url)) {
          return refuse(
            `set ${auditOwnerUrlVariable} to the audit database's owner, postgres://owner:password@host:5432/database ` +
              `(the environment only: a flag would show the password in the process list)`,
          );
        }
        const writers = options.writer?.length ? options.writer : writerOf(process.env[auditUrlVariable]);
        if (writers === undefined) {
          return refuse(
            `name the role the toolgate processes connect as: --writer <role>, or ${auditUrlVariable} with that role as its user`,
          );
        }
        let done: Awaited<ReturnType<typeof initPostgresAuditStore>>;
        try {
          done = await initPostgresAuditStore({ url, writers });
        } catch (error) {
          if ((error as Error).name === 'ConfigurationError') throw error;
          context.output.error(
            `AUDIT_STORE_UNAVAILABLE: the audit database refused or did not answer: ${(error as Error).message}`,
          );
          return 3;
        }
        context.output.out(
          `audit store ready in database ${done.database}: tables and guards owned by ${done.owner}; ` +
            `${done.writers.join(', ')} may insert and read only`,
        );
        return 0;
      }),
    );
}

/** The user of a PostgreSQL URL, or undefined. */
function writerOf(url: string | undefined): string[] | undefined {
  if (!url) return undefined;
  try {
    const user = decodeURIComponent(new URL(url).username);
    return user ? [user] : undefined;
  } catch {
    return undefined;
  }
}
