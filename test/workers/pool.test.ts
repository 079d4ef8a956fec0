/**
 * The synthesis pool's worker threads run with require(esm) off: Piscina first tries
 * require() on the worker file, and on Node 20.19+ require() of an ES module can abort the
 * whole process (a failed assertion in ModuleWrap::CreateRequiredModuleFacade, seen in CI).
 * Off, require() throws ERR_REQUIRE_ESM and Piscina loads the worker with import().
 */
import { describe, expect, it } from 'vitest';
import { SynthesisPool } from '../../src/workers/pool.js';
import { fixture } from '../helpers/service.js';
import { WORKER_FILES } from '../../src/config/paths.js';

describe('SynthesisPool', () => {
  it.runIf(process.allowedNodeEnvironmentFlags.has('--no-experimental-require-module'))('runs its workers with --no-experimental-require-module, and they load an ES module worker', async () => {
    const pool = new SynthesisPool(1, { synthesis: fixture('worker-exec-argv.mjs'), readStore: WORKER_FILES.readStore });
    try {
      const argv = (await pool.run({} as never)) as unknown as string[];
      expect(argv).toContain('--no-experimental-require-module');
    } finally {
      await pool.close();
    }
  });
});
