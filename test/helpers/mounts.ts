/**
 * Real file-system faults for the state database tests: a small tmpfs that fills up (ENOSPC,
 * SQLITE_FULL) and a read-only bind mount (EROFS). Both need root (tests run as root in CI);
 * root ignores permission bits, so `chmod 0555` alone would prove nothing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function run(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Unmounts `dir`, lazily when it is busy (a process that did not exit yet). */
function unmount(dir: string): void {
  if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
}

/** Whether this machine lets the tests mount (root, mount(8), a kernel that allows it). */
export function canMount(): boolean {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rel-a-mount-probe-'));
  try {
    run('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
    unmount(dir);
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Mounts a tmpfs of `size` (e.g. `256k`, `4m`) on `dir` (created).
 * @returns the unmount function (idempotent).
 */
export function mountTmpfs(dir: string, size: string): () => void {
  fs.mkdirSync(dir, { recursive: true });
  run('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir]);
  let mounted = true;
  return () => {
    if (mounted) unmount(dir);
    mounted = false;
  };
}

/**
 * Makes `dir` show the contents of `src`, read-only (a bind mount remounted `ro`): every write
 * in it fails with EROFS, for root too.
 * @returns the unmount function (idempotent).
 */
export function bindReadOnly(src: string, dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true });
  run('mount', ['--bind', src, dir]);
  try {
    run('mount', ['-o', 'remount,bind,ro', dir]);
  } catch (err) {
    unmount(dir);
    throw err;
  }
  let mounted = true;
  return () => {
    if (mounted) unmount(dir);
    mounted = false;
  };
}

/**
 * Fills the file system of `dir` with a file of zeros until it refuses more (ENOSPC).
 * @returns the filler's path (delete it to free the space) and its size in bytes.
 */
export function fillDisk(dir: string): { file: string; bytes: number } {
  const file = path.join(dir, 'rel-a-filler');
  const fd = fs.openSync(file, 'w');
  let bytes = 0;
  try {
    for (const size of [1 << 20, 64 << 10, 4 << 10, 512]) {
      const buf = Buffer.alloc(size);
      for (;;) {
        try {
          bytes += fs.writeSync(fd, buf);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return { file, bytes };
}
