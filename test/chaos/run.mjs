// `npm run chaos -- [--backend cluster|sqlite] [--seconds N] [--seed S]`: the fault-injection run
// (test/chaos/harness.ts) of cluster mode (default) or of one instance on SQLite, for N seconds
// (default 600) with seed S (default: a new one), through vitest, as test/load/chaos.load.test.ts
// and test/load/chaos-sqlite.load.test.ts. Prints its progress and its report.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { backend: { type: 'string', default: 'cluster' }, seconds: { type: 'string', default: '600' }, seed: { type: 'string' } } });
const files = { cluster: 'test/load/chaos.load.test.ts', sqlite: 'test/load/chaos-sqlite.load.test.ts' };
const file = files[values.backend];
if (file === undefined) {
  console.error(`--backend is cluster or sqlite, not ${values.backend}`);
  process.exit(2);
}
const seed = values.seed ?? String(Math.floor(Math.random() * 2 ** 31));
const env = { ...process.env, CHAOS_SECONDS: values.seconds, CHAOS_SEED: seed };
const r = spawnSync('npx', ['vitest', 'run', '--config', 'vitest.load.config.ts', file], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
