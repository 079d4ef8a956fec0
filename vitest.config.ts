import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { HOOK_TIMEOUT_MS, TEST_TIMEOUT_MS } from './test/helpers/ceilings.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every answer a test receives is recorded and checked against the OpenAPI document at the
    // end of the run (issue 11, item 9).
    globalSetup: ['test/helpers/answers-setup.ts'],
    // Tests start real servers, worker threads and child processes: separate processes keep
    // them apart, and the generous time-outs are ceilings for slow or loaded machines, not
    // assertions (test/helpers/ceilings.ts).
    pool: 'forks',
    // Most test time is spent waiting on child processes, worker threads and sockets: on a
    // 2-core machine two files at once take 519 s where vitest's default of one took 602 s.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    testTimeout: TEST_TIMEOUT_MS,
    hookTimeout: HOOK_TIMEOUT_MS,
    teardownTimeout: 30_000,
  },
});
