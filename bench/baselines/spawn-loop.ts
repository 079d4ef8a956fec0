/**
 * P2 baseline: a bare loop of child_process.spawn at the given concurrency. For each child,
 * the time from the start of the loop to its `spawn` event (ms). Repeated `rounds` times;
 * prints {latencies}.
 */
import { spawn } from 'node:child_process';

const [tool, concurrencyArg, roundsArg] = process.argv.slice(2) as [string, string, string];
const latencies: number[] = [];
for (let round = 0; round < Number(roundsArg); round++) {
  const t0 = performance.now();
  const exits: Promise<void>[] = [];
  const spawned: Promise<void>[] = [];
  for (let i = 0; i < Number(concurrencyArg); i++) {
    const child = spawn(process.execPath, [tool, '--project', 'p2'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout.resume();
    child.stderr.resume();
    spawned.push(
      new Promise((r) =>
        child.once('spawn', () => {
          latencies.push(performance.now() - t0);
          r();
        }),
      ),
    );
    exits.push(new Promise((r) => child.once('close', () => r())));
  }
  await Promise.all(spawned);
  await Promise.all(exits);
}
process.stdout.write(`${JSON.stringify({ latencies })}\n`);
