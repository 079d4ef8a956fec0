/**
 * The fault-injection run of one instance on the embedded SQLite database (test/chaos/harness.ts,
 * systems.ts), short: CHAOS_SECONDS (default 60) under faults with seed CHAOS_SEED (default: a new
 * one, printed). The instance itself is SIGKILLed and started again, paused past the clients'
 * request timeout, and its state database's disk fills and empties, under the mixed workload;
 * every invariant of the cluster run is checked. `npm run chaos -- --backend sqlite --seconds 600
 * --seed 7` runs it long (test/chaos/run.mjs). CHAOS_REPORT names a file the report is written to.
 */
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { runChaos } from '../chaos/harness.js';

const seconds = Number(process.env.CHAOS_SECONDS ?? 60);
const seed = process.env.CHAOS_SEED !== undefined ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);

it(
  `one SQLite instance under kills, pauses and a full disk holds every invariant (${seconds} s, seed ${seed})`,
  async () => {
    const report = await runChaos({ backend: 'sqlite', seconds, seed, log: (line) => console.log(`chaos sqlite: ${line}`) });
    console.log(`chaos sqlite report: ${JSON.stringify(report, null, 2)}`);
    if (process.env.CHAOS_REPORT) fs.writeFileSync(process.env.CHAOS_REPORT, JSON.stringify(report, null, 2));
    expect(report.violations).toEqual([]);
    // The run did what it is for: faults of every kind, and writes acknowledged through them.
    expect(report.faults.kills).toBeGreaterThan(0);
    expect(report.faults.pauses).toBeGreaterThan(0);
    expect(report.faults.databaseStops).toBeGreaterThan(0);
    expect(Object.values(report.acknowledged).reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
  },
  // The run itself, then the settling (every job ended, the instance ready) and the checks.
  (seconds + 420) * 1000,
);
