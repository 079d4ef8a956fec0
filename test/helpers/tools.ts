/**
 * Programs of the machine that tests run (promtool, prometheus, nginx, systemd-analyze). A test
 * never skips for a missing one: it fails, naming the program and how to install it.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * The path of `name` on PATH (or in /usr/sbin, /usr/local/sbin, where Debian puts daemons).
 * @throws Error naming the program and `why` (how to get it) when it is not there.
 */
export function requireTool(name: string, why: string): string {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin'];
  for (const d of dirs) {
    const p = path.join(d, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  throw new Error(`${name} is missing: ${why}`);
}
