/**
 * Atomic file writes for the engine CLI: a reader (the service, its watcher, the dispatch
 * tool) sees either the old file or the whole new one, never a half-written file.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes `text` to `file` through a temp file in the same directory, fsynced, then renamed
 * over the target; the directory is fsynced so the rename survives a crash. The temp name
 * starts with a dot and does not end in `.json`, so the service never lists it as an entity.
 * An existing file keeps its permission bits. Missing parent directories are created.
 * @throws the fs error; the temp file is removed first.
 */
export function writeFileAtomic(file: string, text: string | Uint8Array): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  let mode = 0o644;
  try {
    mode = fs.statSync(file).mode & 0o7777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = fs.openSync(temp, 'wx', mode);
  try {
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temp, file);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
  syncDirectory(dir);
}

/** Copies `from` to `to` atomically (see {@link writeFileAtomic}); the bytes are kept as they are. */
export function copyFileAtomic(from: string, to: string): void {
  writeFileAtomic(to, fs.readFileSync(from));
}

/** JSON as the store keeps it: two-space indentation and a final newline. */
export function storeJson(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

function syncDirectory(dir: string): void {
  // Best effort: a directory cannot be opened for fsync everywhere; the file itself is complete.
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // durability of the rename across a crash is weaker, nothing else
  }
}
