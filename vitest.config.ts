import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests start real servers, worker threads and child processes: separate processes keep
    // them apart, and the generous time-outs are ceilings for slow CI machines, not assertions.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
