// `npm run toolgate`: the toolgate CLI through tsx, its package entry resolved to src/ by the source
// condition, so working in this repository needs no build. The installed `toolgate` command
// (bin/toolgate.cjs) runs the same function from dist/.
import { runCli } from 'toolgate';

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
