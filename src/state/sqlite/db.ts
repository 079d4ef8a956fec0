// Opens the state database (better-sqlite3, binding.ts) in WAL mode and migrates it. `synchronous = NORMAL` keeps
// commits across a process crash; only a power loss can lose the last ones, the price of batching events.
import fs from 'node:fs';
import path from 'node:path';
import Database, { type Db } from './binding.js';
import { StateDbError } from '../errors.js';
import { MIGRATIONS } from './migrations/index.js';
import { setWriterSettings } from './connection-settings.js';

export { StateDbError } from '../errors.js';

export type { Db };

export { BACKSTOP_CHECKPOINT_PAGES } from './connection-settings.js';

/**
 * Opens (creating if needed) the database at `file`, checks it, migrates it and writes once, so a damaged or
 * unwritable database stops start-up here rather than failing the first request.
 * @throws StateDbError naming `file` and why in plain words (a corrupt file is left exactly as it is).
 */
export function openStateDb(file: string): Db {
  const dir = path.dirname(file);
  let db: Db | undefined;
  try {
    makeFolder(dir);
    // An existing database this user cannot write is refused before SQLite opens it: SQLite
    // would open it read-only, and leave -wal and -shm files beside it on the way to failing.
    if (fs.existsSync(file)) fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK);
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    // With a backstop bounding the WAL when no checkpointer runs (tools, tests); see checkpointer.ts.
    setWriterSettings(db);
    // Damage inside the file is found now, named, rather than by whichever read meets it later.
    const check = String(db.pragma('quick_check(1)', { simple: true }));
    if (check !== 'ok') throw Object.assign(new Error(`database disk image is malformed: ${check}`), { code: 'SQLITE_CORRUPT' });
    migrate(db);
    db.prepare(`INSERT INTO meta (key, value) VALUES ('opened_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(new Date().toISOString());
    return db;
  } catch (err) {
    db?.close();
    throw new StateDbError(`cannot open state database ${file}: ${explain(err, file, dir)}`, { cause: err });
  }
}

/** Creates the folder; Node reports a read-only file system as ENOENT, so the nearest existing parent tells why. */
function makeFolder(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (err) {
    let parent = dir;
    while (!fs.existsSync(parent) && path.dirname(parent) !== parent) parent = path.dirname(parent);
    try {
      fs.accessSync(parent, fs.constants.W_OK);
    } catch (denied) {
      throw Object.assign(new Error(`the folder ${dir} cannot be created: ${parent} ${reasonOf(denied)}`), { code: (denied as NodeJS.ErrnoException).code });
    }
    throw err;
  }
}

/** Plain words for what went wrong, with the underlying message. */
function explain(err: unknown, file: string, dir: string): string {
  const e = err as { code?: string; message?: string };
  const msg = (e?.message ?? String(err)).replace(/\s*\n\s*/g, '; ');
  const code = e?.code ?? '';
  if (msg.startsWith('the folder ')) return msg;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC') return `no space left on the disk of ${dir} (${msg})`;
  if (code.startsWith('SQLITE_IOERR')) {
    // SQLite reports a full disk met while growing its shared-memory file as an I/O error.
    const free = freeBytes(dir);
    if (free !== null && free < LOW_SPACE_BYTES) return `no space left on the disk of ${dir} (${free} bytes free; ${msg}, ${code})`;
    return `${msg} (${code})`;
  }
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return `not a valid SQLite database (${msg}); the file was left as it is: move it away to start with an empty state, or restore a backup`;
  }
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
    // SQLite says little ("unable to open database file"): the folder and the file tell more.
    const where = [dir, file].find((p) => fs.existsSync(p) && !writable(p));
    if (where) return `${where} ${reasonOf(accessError(where))} (${msg})`;
  }
  if (code === 'ENOTDIR' || code === 'EEXIST') return `${dir} is not a folder (${msg})`;
  return msg;
}

/** Below this much free space, an I/O error of the database is taken for a full disk. */
const LOW_SPACE_BYTES = 1 << 20;

/** Bytes free for this user on the file system of `dir`, or null when it cannot be read. */
function freeBytes(dir: string): number | null {
  try {
    const st = fs.statfsSync(dir);
    return st.bavail * st.bsize;
  } catch {
    return null;
  }
}

function writable(p: string): boolean {
  return accessError(p) === undefined;
}

function accessError(p: string): unknown {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return undefined;
  } catch (err) {
    return err;
  }
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'EROFS') return 'is on a read-only file system';
  if (code === 'EACCES' || code === 'EPERM') return 'is not writable by this user (permission denied)';
  return `cannot be written (${(err as Error)?.message ?? String(err)})`;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`schema version ${current} is newer than this service (${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
