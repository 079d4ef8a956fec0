// Where the service's own files are; only src/main reads these and hands them on.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root: this file is `src/config/paths.ts` or `dist/config/paths.js`. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The compiled worker files (workers always run dist/: vitest's transform does not reach them). */
export interface WorkerFiles {
  /** Entity synthesis (src/workers/synthesize.ts). */
  readonly synthesis: string;
  /** Store reads (src/workers/read-store.ts). */
  readonly readStore: string;
  /** /proc scans and tree signals (src/process/proc-worker.ts). */
  readonly proc: string;
  /** WAL checkpoints, a task of the process worker's thread (src/state/sqlite/checkpoint-task.ts). */
  readonly checkpoint: string;
  /** Stream replays' database reads, on their own thread (src/state/sqlite/replay-task.ts). */
  readonly replay: string;
  /** The event writer thread (src/state/sqlite/event-writer-task.ts). */
  readonly eventWriter: string;
  /** Cluster mode's event append thread (src/state/pg/append-task.ts). */
  readonly pgAppend: string;
  /** The spawn helper process's program (src/process/spawn-helper-main.ts). */
  readonly spawnHelper: string;
  /** The job I/O thread (src/supervisor/job-io-main.ts). */
  readonly jobIo: string;
}

export const WORKER_FILES: WorkerFiles = Object.freeze({
  synthesis: path.join(REPO_ROOT, 'dist', 'workers', 'synthesize.js'),
  readStore: path.join(REPO_ROOT, 'dist', 'workers', 'read-store.js'),
  proc: path.join(REPO_ROOT, 'dist', 'process', 'proc-worker.js'),
  checkpoint: path.join(REPO_ROOT, 'dist', 'state', 'sqlite', 'checkpoint-task.js'),
  replay: path.join(REPO_ROOT, 'dist', 'state', 'sqlite', 'replay-task.js'),
  eventWriter: path.join(REPO_ROOT, 'dist', 'state', 'sqlite', 'event-writer-task.js'),
  pgAppend: path.join(REPO_ROOT, 'dist', 'state', 'pg', 'append-task.js'),
  spawnHelper: path.join(REPO_ROOT, 'dist', 'process', 'spawn-helper-main.js'),
  jobIo: path.join(REPO_ROOT, 'dist', 'supervisor', 'job-io-main.js'),
});

/** Application version (spec: Versioning): package.json's `version`, written in one place. */
export const APP_VERSION: string = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
