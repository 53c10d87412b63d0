// What entering a V8 context costs with and without a timeout: the Temporal TypeScript SDK enters its
// workflow context with `isolateExecutionTimeout` (its deadlock detection) several times per workflow
// activation, and Node's vm starts a watchdog for every entry that has a timeout. Prints µs per entry.
// Run by hand: `npx tsx bench/vm-entry.ts`.
import vm from 'node:vm';

const context = vm.createContext({}, { microtaskMode: 'afterEvaluate' });
vm.runInContext('globalThis.step = () => 1', context);
const script = new vm.Script('step()');
const entries = 20_000;

function microsPerEntry(options: vm.RunningScriptOptions): number {
  const started = process.hrtime.bigint();
  for (let index = 0; index < entries; index++) script.runInContext(context, options);
  return Number(process.hrtime.bigint() - started) / entries / 1000;
}

for (let round = 1; round <= 3; round++) {
  const plain = microsPerEntry({});
  const watched = microsPerEntry({ timeout: 5_000 });
  process.stdout.write(
    `round ${round}: ${plain.toFixed(1)} µs per entry without a timeout, ${watched.toFixed(1)} µs with one ` +
      `(${(watched / plain).toFixed(0)}x)\n`,
  );
}
