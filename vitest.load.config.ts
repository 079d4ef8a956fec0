import { defineConfig } from 'vitest/config';

/** `npm run test:load`: the bounded load test, run by CI after the other tests. */
export default defineConfig({
  test: {
    include: ['test/load/**/*.load.test.ts'],
    pool: 'forks',
    testTimeout: 110_000,
    hookTimeout: 60_000,
  },
});
