// `npm run toolgate`: the toolgate CLI from src/ through tsx, so working in this repository needs no
// build. The installed `toolgate` command (bin/toolgate.cjs) runs the same main() from dist/.
import { main } from '../src/cli/main';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
