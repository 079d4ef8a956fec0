/** Paths used by the benchmarks (compiled to bench/.work/dist). */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** bench/.work/dist/lib → repository root. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
export const BENCH_DIST = path.join(REPO_ROOT, 'bench', '.work', 'dist');
export const WORK_DIR = path.join(REPO_ROOT, 'bench', '.work');
/** This tree's build of the service. */
export const THIS_SERVICE_ENTRY = path.join(REPO_ROOT, 'dist', 'main', 'index.js');
let serviceEntryInUse = process.env.BENCH_SERVICE_ENTRY || THIS_SERVICE_ENTRY;
/**
 * The service the rows start: this tree's build, or BENCH_SERVICE_ENTRY (another build's
 * `dist/main/index.js`, for back-to-back comparisons with older code in the notes); the runner's
 * A/B mode (BENCH_AB_BASE) switches between two builds row by row with `useServiceEntry`.
 */
export function serviceEntry(): string {
  return serviceEntryInUse;
}
/** Makes the rows started from now on run the build whose `dist/main/index.js` is `entry`. */
export function useServiceEntry(entry: string): void {
  serviceEntryInUse = entry;
}
export const RESULTS_FILE = path.join(REPO_ROOT, 'bench', 'RESULTS.md');
export const benchScript = (rel: string) => path.join(BENCH_DIST, rel);

/**
 * An engine store with no project, for the rows that only run jobs (P2, P3, P4, P6): created
 * when missing, since the service refuses a CONSOLE_DATA_DIR that does not exist.
 */
export function emptyStoreDir(): string {
  const dir = path.join(WORK_DIR, 'p3-store');
  fs.mkdirSync(path.join(dir, 'projects'), { recursive: true });
  return dir;
}
