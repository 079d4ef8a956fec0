/** Resolves TTYD_BIN before spawning, so a missing program is a clear 503, not a failed exec. */
import fs from 'node:fs';
import path from 'node:path';
import { TerminalProgramMissingError } from './errors.js';

/** The absolute path of `bin`, a path or a bare name looked up in `pathEnv` (like execvp). @throws TerminalProgramMissingError saying why. */
export function findProgram(bin: string, pathEnv: string | undefined): string {
  if (bin.includes('/')) {
    const why = unusable(bin);
    if (why) throw new TerminalProgramMissingError(`terminal program ${bin} ${why} (TTYD_BIN)`);
    return bin;
  }
  for (const dir of (pathEnv ?? '').split(path.delimiter)) {
    if (!dir) continue; // an empty PATH entry would mean the service's cwd: never trusted here
    const candidate = path.resolve(dir, bin);
    if (!unusable(candidate)) return candidate;
  }
  throw new TerminalProgramMissingError(`terminal program "${bin}" not found on PATH; install ttyd or set TTYD_BIN to the program's path`);
}

/** Why `file` cannot be executed, or null when it can. */
function unusable(file: string): string | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return 'does not exist';
  }
  if (!st.isFile()) return 'is not a file';
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    return 'is not executable';
  }
  return null;
}
