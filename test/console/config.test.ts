/**
 * The console-state variables of the configuration (README, configuration table).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../src/config/config.js';

describe('CONSOLE_CLICKS_PER_PROJECT, CONSOLE_CLICKS_MAX_TOTAL and CONSOLE_WORKSPACE_REPORT_MAX_BYTES', () => {
  it('default to 1000 clicks, 1,000,000 clicks and 256 KiB', () => {
    expect(readConfig({}).consoleState).toEqual({ clicksPerProject: 1000, clicksMaxTotal: 1_000_000, workspaceReportMaxBytes: 262_144 });
  });

  it('are read as integers', () => {
    const c = readConfig({ CONSOLE_CLICKS_PER_PROJECT: ' 5 ', CONSOLE_CLICKS_MAX_TOTAL: '20', CONSOLE_WORKSPACE_REPORT_MAX_BYTES: '4096' });
    expect(c.consoleState).toEqual({ clicksPerProject: 5, clicksMaxTotal: 20, workspaceReportMaxBytes: 4096 });
  });

  it.each([
    ['CONSOLE_CLICKS_PER_PROJECT', '0'],
    ['CONSOLE_CLICKS_PER_PROJECT', 'many'],
    ['CONSOLE_CLICKS_MAX_TOTAL', '0'],
    ['CONSOLE_CLICKS_MAX_TOTAL', '1e6'],
    ['CONSOLE_CLICKS_MAX_TOTAL', '-5'],
    ['CONSOLE_WORKSPACE_REPORT_MAX_BYTES', '10'],
    ['CONSOLE_WORKSPACE_REPORT_MAX_BYTES', '1.5'],
  ])('%s=%s stops start-up with a message naming the variable', (name, value) => {
    expect(() => readConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => readConfig({ [name]: value })).toThrow(name);
  });
});
