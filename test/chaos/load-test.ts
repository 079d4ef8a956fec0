/**
 * The short fault-injection run as a test (test/load/chaos*.load.test.ts): CHAOS_SECONDS (default
 * 60) under faults with seed CHAOS_SEED (default: a new one, printed); CHAOS_REPORT names a file
 * the report is written to as JSON. It passes when every invariant held, faults of every kind
 * happened, and writes were acknowledged through them.
 */
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { runChaos } from './harness.js';
import type { ChaosBackend } from './systems.js';

/** Declares the run on `backend` as a test named `what` (its length and seed are added). */
export function chaosLoadTest(backend: ChaosBackend, what: string): void {
  const seconds = Number(process.env.CHAOS_SECONDS ?? 60);
  const seed = process.env.CHAOS_SEED !== undefined ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  const tag = backend === 'cluster' ? 'chaos' : `chaos ${backend}`;
  it(
    `${what} (${seconds} s, seed ${seed})`,
    async () => {
      const report = await runChaos({ backend, seconds, seed, log: (line) => console.log(`${tag}: ${line}`) });
      console.log(`${tag} report: ${JSON.stringify(report, null, 2)}`);
      if (process.env.CHAOS_REPORT) fs.writeFileSync(process.env.CHAOS_REPORT, JSON.stringify(report, null, 2));
      expect(report.violations).toEqual([]);
      // The run did what it is for: faults of every kind, and writes acknowledged through them.
      expect(report.faults.kills).toBeGreaterThan(0);
      expect(report.faults.pauses).toBeGreaterThan(0);
      expect(report.faults.databaseStops).toBeGreaterThan(0);
      expect(Object.values(report.acknowledged).reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
    },
    // The run itself, then the settling (every job ended, every instance ready) and the checks.
    (seconds + 420) * 1000,
  );
}
