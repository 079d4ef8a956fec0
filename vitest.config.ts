import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every answer a test receives is recorded and checked against the OpenAPI document at the
    // end of the run (issue 11, item 9).
    globalSetup: ['test/helpers/answers-setup.ts'],
    // Tests start real servers, worker threads and child processes: separate processes keep
    // them apart, and the generous time-outs are ceilings for slow CI machines, not assertions.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
