import { defineConfig } from 'vitest/config';
import { HOOK_TIMEOUT_MS } from './test/helpers/ceilings.js';

/** `npm run test:load`: the bounded load test and the short fault-injection run of cluster mode alone, one at a time (`npm test` runs them too, beside the other files; CI runs this on Node.js 22). */
export default defineConfig({
  test: {
    include: ['test/load/**/*.load.test.ts'],
    pool: 'forks',
    // The storm and the fault-injection run each load the machine on purpose: one at a time.
    fileParallelism: false,
    testTimeout: 110_000,
    // The hooks' waits are bounded by it (test/helpers/ceilings.ts).
    hookTimeout: HOOK_TIMEOUT_MS,
  },
});
