import { randomBytes } from 'node:crypto';
import { access, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isNotFound } from './read-json.js';
import { findHighestTakeNumber, formatTakeId } from './take-ids.js';

/** A take id held by this run: its media file exists (empty) and is open for writing. */
export interface Reservation {
  takeId: string;
  takeNumber: number;
  /** Path relative to the project directory, as stored in the take's `media`. */
  media: string;
  handle: FileHandle;
}

/** The take file a run writes (engine-format.md §takes/<take_id>.json). */
export interface NewTake {
  take_id: string;
  shot_id: string;
  parent_take_id: string | null;
  model: string;
  /** ISO 8601 UTC, whole seconds, like the rest of the store. */
  created_at: string;
  media: string;
}

// Far above realistic concurrency; only a broken media directory could exhaust it.
const MAX_ATTEMPTS = 1000;

/** One more than the highest `tk_N` among the project's take and media files. */
export async function findNextTakeNumber(projectDir: string): Promise<number> {
  return (await findHighestTakeNumber([path.join(projectDir, 'takes'), path.join(projectDir, 'media')])) + 1;
}

/** Reserves the next free take id by creating `media/<id>.png` with O_EXCL, as concurrent runs see the same highest number. @throws Error past MAX_ATTEMPTS or on an fs error. */
export async function reserveTakeId(projectDir: string): Promise<Reservation> {
  const mediaDir = path.join(projectDir, 'media');
  await mkdir(mediaDir, { recursive: true });
  await mkdir(path.join(projectDir, 'takes'), { recursive: true });
  const first = await findNextTakeNumber(projectDir);
  for (let takeNumber = first; takeNumber < first + MAX_ATTEMPTS; takeNumber++) {
    const takeId = formatTakeId(takeNumber);
    if (await fileExists(path.join(projectDir, 'takes', `${takeId}.json`))) continue;
    const media = `media/${takeId}.png`;
    try {
      const handle = await open(path.join(projectDir, media), 'wx');
      return { takeId, takeNumber, media, handle };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  throw new Error(`no free take id in ${first}..${first + MAX_ATTEMPTS - 1}`);
}

/** Writes the rendered media into the reserved file, fsyncs and closes it. */
export async function writeMedia(reservation: Reservation, data: Uint8Array): Promise<void> {
  try {
    await reservation.handle.writeFile(data);
    await reservation.handle.sync();
  } finally {
    await reservation.handle.close();
  }
}

/** Gives a reservation back after a failure, removing the media file so none is left without a take. Never throws. */
export async function releaseReservation(projectDir: string, reservation: Reservation): Promise<void> {
  await reservation.handle.close().catch(() => {});
  await unlink(path.join(projectDir, reservation.media)).catch(() => {});
}

/**
 * Writes `takes/<take_id>.json` atomically via a fsynced temp file `.<take_id>.<random>.tmp` (a dot and no `.json`: never listed),
 * renamed into place; the directory is fsynced so the rename survives a crash.
 */
export async function writeTakeFile(projectDir: string, take: NewTake): Promise<void> {
  const takesDir = path.join(projectDir, 'takes');
  const temp = path.join(takesDir, `.${take.take_id}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx');
  try {
    await handle.writeFile(`${JSON.stringify(take, null, 2)}\n`);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path.join(takesDir, `${take.take_id}.json`));
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(takesDir);
}

async function syncDirectory(dir: string): Promise<void> {
  // Best effort: some platforms (Windows) cannot open a directory for fsync.
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // The take file is complete either way; only its durability across a crash is weaker.
  }
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
