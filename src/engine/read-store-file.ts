/**
 * The one way the service reads an engine-store file: never outside the store (realpath, then
 * `/proc` against a swap), never blocking (O_NONBLOCK | O_NOFOLLOW, regular files only), always
 * bounded (bytes, JSON depth); problems never quote contents or paths beyond the store.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { problem, type StoreFileProblem, type StoreRead } from './store-read.js';
import { parseStoreJson } from './store-json.js';

/** Where and how store files are read: plain data, handed to the workers with each task. */
export interface StoreAccess {
  /** The store root's real path (no symbolic link in it), absolute. */
  readonly root: string;
  /** CONSOLE_STORE_FILE_MAX_BYTES: larger files are refused before they are read. */
  readonly maxBytes: number;
  /** CONSOLE_STORE_JSON_MAX_DEPTH: deeper JSON values are refused (`{}` and `[]` are level 1). */
  readonly maxDepth: number;
}

/** Default of CONSOLE_STORE_FILE_MAX_BYTES (src/config/config.ts). */
export const DEFAULT_STORE_FILE_MAX_BYTES = 4 * 1024 * 1024;
/** Default of CONSOLE_STORE_JSON_MAX_DEPTH (src/config/config.ts). */
export const DEFAULT_STORE_JSON_MAX_DEPTH = 64;

const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW;

/** Node's own realpath walk (`lstat` per component), so folders above the store are only ever `lstat`ed. */
const realpathWalk = promisify(fs.realpath);

/** The access to the store at `root`, its real path resolved once so later links cannot redirect it. */
export function storeAccess(root: string, limits: { readonly fileMaxBytes: number; readonly jsonMaxDepth: number }): StoreAccess {
  let real: string;
  try {
    real = fs.realpathSync(root);
  } catch {
    real = path.resolve(root);
  }
  return { root: real, maxBytes: limits.fileMaxBytes, maxDepth: limits.jsonMaxDepth };
}

/** Reads the JSON of store file `rel`, which must stay inside `within` (both store-relative). Synchronous; never throws for store content. */
export function readStoreJsonSync(access: StoreAccess, rel: string, within: string): StoreRead<unknown> {
  const bytes = readOpened(openSync(access, rel, within), access.maxBytes, true);
  if (bytes.kind !== 'ok') return bytes;
  return parseStoreJson(bytes.value, access.maxDepth);
}

/** Like {@link readStoreJsonSync} for an entry of a listed folder: a plain file costs no realpath walk (projects have thousands). */
export function readFolderEntryJsonSync(access: StoreAccess, folder: StoreFolder, entry: fs.Dirent): StoreRead<unknown> {
  const bytes = readFolderEntrySync(access, folder, entry);
  if (bytes.kind !== 'ok') return bytes;
  return parseStoreJson(bytes.value, access.maxDepth);
}

function readFolderEntrySync(access: StoreAccess, folder: StoreFolder, entry: fs.Dirent): StoreRead<Buffer> {
  if (entry.isSymbolicLink()) return readStoreFileSync(access, `${folder.rel}/${entry.name}`, folder.within);
  if (!entry.isFile()) return notRegular(entry);
  // The folder was checked once for all its entries and the listing says regular file: no
  // `/proc` check or fstat per file (a third of a large project's cold load). O_NOFOLLOW still
  // refuses a swapped-in link, O_NONBLOCK a pipe, and the byte bound holds whatever the file is.
  let fd: number;
  try {
    fd = fs.openSync(`${folder.real}/${entry.name}`, OPEN_FLAGS);
  } catch (err) {
    return failure(err);
  }
  return readOpened({ kind: 'ok', value: { fd, size: SCRATCH_BYTES - 1 } }, access.maxBytes, true);
}

/** The thread's read buffer for JSON reads, each parsed before the next read: no buffer per file of a large project. */
const SCRATCH_BYTES = 64 * 1024;
let scratch: Buffer | undefined;

/** Reads the bytes of the store file `rel`, inside `within` (see {@link readStoreJsonSync}). */
export function readStoreFileSync(access: StoreAccess, rel: string, within: string): StoreRead<Buffer> {
  return readOpened(openSync(access, rel, within), access.maxBytes, false);
}

/** Reads an opened file whole (within `maxBytes`) and closes it; `transient` bytes may be the thread's buffer, valid until its next read. */
function readOpened(opened: StoreRead<Opened>, maxBytes: number, transient: boolean): StoreRead<Buffer> {
  if (opened.kind !== 'ok') return opened;
  const { fd, size } = opened.value;
  try {
    // One byte more than expected: a short read then says the end was reached.
    const want = Math.min(size, maxBytes) + 1;
    const first = transient && want <= SCRATCH_BYTES ? (scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES)).subarray(0, want) : Buffer.allocUnsafe(want);
    return readAll(fd, first, maxBytes);
  } catch (err) {
    return failure(err);
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether the store file `rel` is there and usable as a file (inside `within`, regular, within the byte bound), without reading it. */
export function checkStoreFileSync(access: StoreAccess, rel: string, within: string): StoreRead<{ readonly size: number }> {
  const opened = openSync(access, rel, within);
  if (opened.kind !== 'ok') return opened;
  fs.closeSync(opened.value.fd);
  return { kind: 'ok', value: { size: opened.value.size } };
}

/** A folder of the store as listed: `rel` as asked, `within` its files' bound, `real` checked inside it; entries sorted by name. */
export interface StoreFolder {
  /** Store-relative path, as asked. */
  readonly rel: string;
  /** The folder its files must stay in (store-relative). */
  readonly within: string;
  /** Its real path, checked to be inside `within`. */
  readonly real: string;
  /** Entries, sorted by name; each knows its type from the listing (no extra call). */
  readonly entries: readonly fs.Dirent[];
}

/** The entries of the store folder `rel` (inside `within`, or `within` itself), sorted by name; `absent` when there is none. */
export function listStoreDirSync(access: StoreAccess, rel: string, within: string): StoreRead<StoreFolder> {
  const abs = path.join(access.root, rel);
  let real: string;
  try {
    real = fs.realpathSync(abs);
  } catch (err) {
    return failure(err);
  }
  const outside = outsideProblem(access, real, within, true);
  if (outside) return { kind: 'problem', problem: outside };
  try {
    const entries = fs.readdirSync(real, { withFileTypes: true });
    return { kind: 'ok', value: { rel, within, real, entries: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) } };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return problem('file', 'not a folder', 'make it a folder of JSON files');
    return failure(err);
  }
}

/** An open media file: a descriptor checked to be a regular file inside its folder. */
export interface OpenStoreFile {
  readonly handle: fsp.FileHandle;
  readonly stats: fs.Stats;
  /** Opens exactly this file again while `handle` is open: `/proc/self/fd/<fd>` (no swap race), else its real path. */
  readonly path: string;
}

/** Opens the store file `rel` inside `within` for streaming media on the main thread: the same checks, no byte bound. The caller closes `handle`. */
export async function openStoreFile(access: StoreAccess, rel: string, within: string): Promise<StoreRead<OpenStoreFile>> {
  let real: string;
  try {
    real = await realpathWalk(path.join(access.root, rel));
  } catch (err) {
    return failure(err);
  }
  const outside = outsideProblem(access, real, within, false);
  if (outside) return { kind: 'problem', problem: outside };
  let handle: fsp.FileHandle;
  try {
    const before = await fsp.lstat(real);
    if (!before.isFile()) return notRegular(before);
    handle = await fsp.open(real, OPEN_FLAGS);
  } catch (err) {
    return failure(err);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) {
      await handle.close();
      return notRegular(stats);
    }
    const proc = await fsp.readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
    if (proc !== null && outsideProblem(access, stripDeleted(proc), within, false)) {
      await handle.close();
      return problem('file', 'a symbolic link leading outside its folder', 'replace the link by the file itself');
    }
    return { kind: 'ok', value: { handle, stats, path: proc === null ? real : `/proc/self/fd/${handle.fd}` } };
  } catch (err) {
    await handle.close();
    return failure(err);
  }
}

interface Opened {
  readonly fd: number;
  readonly size: number;
}

/** Resolves, checks and opens `rel` (see the module comment); the caller closes the descriptor. */
function openSync(access: StoreAccess, rel: string, within: string): StoreRead<Opened> {
  let real: string;
  try {
    real = fs.realpathSync(path.join(access.root, rel));
  } catch (err) {
    return failure(err);
  }
  const outside = outsideProblem(access, real, within, false);
  if (outside) return { kind: 'problem', problem: outside };
  try {
    const before = fs.lstatSync(real);
    if (!before.isFile()) return notRegular(before);
  } catch (err) {
    return failure(err);
  }
  return openResolvedSync(access, real, within);
}

/** Opens `real` (no links, inside `within`) and checks the descriptor; `procCheck`: its `/proc` path must be inside too. */
function openResolvedSync(access: StoreAccess, real: string, within: string, procCheck = true): StoreRead<Opened> {
  let fd: number;
  try {
    fd = fs.openSync(real, OPEN_FLAGS);
  } catch (err) {
    return failure(err);
  }
  try {
    const stats = fs.fstatSync(fd);
    let bad: StoreRead<never> | null = null;
    if (!stats.isFile()) bad = notRegular(stats);
    else if (stats.size > access.maxBytes) bad = tooLarge(access.maxBytes);
    else if (procCheck && procPathOutside(access, fd, within)) bad = problem('file', 'a symbolic link leading outside its folder', 'replace the link by the file itself');
    if (bad) {
      fs.closeSync(fd);
      return bad;
    }
    return { kind: 'ok', value: { fd, size: stats.size } };
  } catch (err) {
    fs.closeSync(fd);
    return failure(err);
  }
}

/** Reads `fd` to its end into `first` (grown as it fills), at most `max` bytes: a file that grew past it is too large. */
function readAll(fd: number, first: Buffer, max: number): StoreRead<Buffer> {
  let buf = first;
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      if (buf.length > max) return tooLarge(max);
      const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, max + 1));
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const want = buf.length - length;
    const n = fs.readSync(fd, buf, length, want, null);
    length += n;
    // A regular file reads short only at its end: no extra call to see the end again.
    if (n < want) break;
  }
  return { kind: 'ok', value: buf.subarray(0, length) };
}

/** Whether the descriptor's own path (from `/proc`) lies outside `within`; false without `/proc`. */
function procPathOutside(access: StoreAccess, fd: number, within: string): boolean {
  let opened: string;
  try {
    opened = fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return false;
  }
  return outsideProblem(access, stripDeleted(opened), within, false) !== null;
}

/** A file removed after it was opened reads as `<path> (deleted)` in `/proc`. */
function stripDeleted(p: string): string {
  return p.endsWith(' (deleted)') ? p.slice(0, -' (deleted)'.length) : p;
}

/** The problem of a real path outside `within` (store-relative), or null; `self` allows the folder itself (listings). */
function outsideProblem(access: StoreAccess, real: string, within: string, self: boolean): StoreFileProblem | null {
  const folder = path.join(access.root, within);
  if (real.startsWith(folder + path.sep) || (self && real === folder)) return null;
  return { level: 'file', why: `a symbolic link leading outside ${within}`, fix: 'replace the link by the file itself' };
}

function notRegular(stats: fs.Stats | fs.Dirent): StoreRead<never> {
  const what = stats.isFIFO()
    ? 'a named pipe'
    : stats.isSocket()
      ? 'a socket'
      : stats.isCharacterDevice()
        ? 'a character device'
        : stats.isBlockDevice()
          ? 'a block device'
          : stats.isDirectory()
            ? 'a folder'
            : 'not a file';
  return problem('file', `not a regular file (${what})`, 'replace it by a regular JSON file');
}

function tooLarge(max: number): StoreRead<never> {
  return problem('file', `larger than ${max} bytes, CONSOLE_STORE_FILE_MAX_BYTES`, 'make it smaller or raise CONSOLE_STORE_FILE_MAX_BYTES');
}

/** An fs error as a read outcome: a missing file is `absent`; the rest by its code only (fs messages hold absolute paths). */
function failure(err: unknown): StoreRead<never> {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return { kind: 'absent' };
    case 'ELOOP':
      // From realpath: a loop of links. From open with O_NOFOLLOW: a link swapped in after realpath.
      return problem('file', 'a symbolic link loop, or a link that changed while it was read', 'replace the link by the file itself');
    case 'EACCES':
    case 'EPERM':
      return problem('file', 'not readable by the service (permission denied)', "let the service's user read it");
    case 'ENXIO':
      return problem('file', 'not a regular file (a socket or a device)', 'replace it by a regular JSON file');
    case 'ENAMETOOLONG':
      return problem('file', 'a path too long to open', 'shorten the links that lead to it');
    default:
      return problem('file', `not readable (${code ?? 'read error'})`, 'check the file and its disk');
  }
}
