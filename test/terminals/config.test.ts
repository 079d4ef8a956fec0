/**
 * The terminal variables of the configuration: TTYD_BIN, TTYD_COMMAND, CONSOLE_TTYD_PORTS,
 * CONSOLE_TTYD_READY_MS (defaults, forms, and errors naming the variable).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../src/config/config.js';

const read = (env: Record<string, string>) => readConfig(env, '/srv/console');

describe('terminal configuration', () => {
  it('has defaults: ttyd on PATH running bash on ports 7681-7699', () => {
    expect(read({}).terminals).toEqual({ bin: 'ttyd', command: ['bash'], portFirst: 7681, portLast: 7699, readyTimeoutMs: 10_000 });
  });

  it('resolves a TTYD_BIN path against the working folder, and keeps a bare name for the PATH lookup', () => {
    expect(read({ TTYD_BIN: 'bin/ttyd' }).terminals.bin).toBe(path.resolve('/srv/console', 'bin/ttyd'));
    expect(read({ TTYD_BIN: '/opt/ttyd/ttyd' }).terminals.bin).toBe('/opt/ttyd/ttyd');
    expect(read({ TTYD_BIN: ' ttyd.x86_64 ' }).terminals.bin).toBe('ttyd.x86_64');
  });

  it('reads TTYD_COMMAND as words or as a JSON array', () => {
    expect(read({ TTYD_COMMAND: '  tmux new -A -s console ' }).terminals.command).toEqual(['tmux', 'new', '-A', '-s', 'console']);
    expect(read({ TTYD_COMMAND: '["bash","-c","echo a b; exec bash"]' }).terminals.command).toEqual(['bash', '-c', 'echo a b; exec bash']);
    for (const bad of ['[]', '["a", 1]', '[""]', '[not json', '   ']) {
      expect(() => read({ TTYD_COMMAND: bad }), bad).toThrow(ConfigError);
      expect(() => read({ TTYD_COMMAND: bad }), bad).toThrow(/TTYD_COMMAND/);
    }
  });

  it('reads CONSOLE_TTYD_PORTS as first-last or one port', () => {
    expect(read({ CONSOLE_TTYD_PORTS: '9000-9009' }).terminals).toMatchObject({ portFirst: 9000, portLast: 9009 });
    expect(read({ CONSOLE_TTYD_PORTS: ' 9000 - 9001 ' }).terminals).toMatchObject({ portFirst: 9000, portLast: 9001 });
    expect(read({ CONSOLE_TTYD_PORTS: '9000' }).terminals).toMatchObject({ portFirst: 9000, portLast: 9000 });
    for (const bad of ['9009-9000', '0-10', '9000-70000', 'a-b', '9000,9001', '']) {
      expect(() => read({ CONSOLE_TTYD_PORTS: bad }), bad).toThrow(/CONSOLE_TTYD_PORTS/);
    }
  });

  it('bounds CONSOLE_TTYD_READY_MS', () => {
    expect(read({ CONSOLE_TTYD_READY_MS: '0' }).terminals.readyTimeoutMs).toBe(0);
    expect(() => read({ CONSOLE_TTYD_READY_MS: '-1' })).toThrow(/CONSOLE_TTYD_READY_MS/);
  });
});
