// `npm run chaos -- [--seconds N] [--seed S]`: the fault-injection run of cluster mode
// (test/chaos/harness.ts) for N seconds (default 600) with seed S (default: a new one), through
// vitest, as test/load/chaos.load.test.ts. Prints its progress and its report.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '600' }, seed: { type: 'string' } } });
const seed = values.seed ?? String(Math.floor(Math.random() * 2 ** 31));
const env = { ...process.env, CHAOS_SECONDS: values.seconds, CHAOS_SEED: seed };
const r = spawnSync('npx', ['vitest', 'run', '--config', 'vitest.load.config.ts', 'test/load/chaos.load.test.ts'], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
