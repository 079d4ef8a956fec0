/**
 * The sweep's bounds are configuration: CONSOLE_SWEEP_MAX_PASSES and
 * CONSOLE_SWEEP_MAX_MS, read once by src/config/config.ts, with defaults and checked ranges.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../src/config/config.js';

describe('CONSOLE_SWEEP_MAX_PASSES and CONSOLE_SWEEP_MAX_MS', () => {
  it('default to 100 passes and 5000 ms', () => {
    expect(readConfig({}).processes).toEqual({ sweepMaxPasses: 100, sweepMaxMs: 5000 });
  });

  it('take integers in their ranges', () => {
    expect(readConfig({ CONSOLE_SWEEP_MAX_PASSES: '1', CONSOLE_SWEEP_MAX_MS: '0' }).processes).toEqual({ sweepMaxPasses: 1, sweepMaxMs: 0 });
    expect(readConfig({ CONSOLE_SWEEP_MAX_PASSES: ' 100000 ', CONSOLE_SWEEP_MAX_MS: '600000' }).processes).toEqual({ sweepMaxPasses: 100_000, sweepMaxMs: 600_000 });
  });

  it.each([
    ['CONSOLE_SWEEP_MAX_PASSES', '0', /must be at least 1/],
    ['CONSOLE_SWEEP_MAX_PASSES', '100001', /must be at most 100000/],
    ['CONSOLE_SWEEP_MAX_PASSES', 'many', /expected an integer/],
    ['CONSOLE_SWEEP_MAX_MS', '-1', /must be at least 0/],
    ['CONSOLE_SWEEP_MAX_MS', '600001', /must be at most 600000/],
    ['CONSOLE_SWEEP_MAX_MS', '1.5', /expected an integer/],
  ])('refuse %s=%s, naming the variable', (name, value, message) => {
    expect(() => readConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => readConfig({ [name]: value })).toThrow(new RegExp(`${name}: ${message.source}`));
  });
});
