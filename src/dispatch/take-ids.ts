import { readdir } from 'node:fs/promises';
import { isNotFound } from './read-json.js';

/** Take ids: `tk_` and a number ≥ 1 zero-padded to four digits, unique within a project. */
const TAKE_NAME = /^tk_(\d+)(?:\.|$)/;

/** `tk_NNNN` for a take number (≥ 1). */
export function formatTakeId(takeNumber: number): string {
  return `tk_${String(takeNumber).padStart(4, '0')}`;
}

/** The take number in a take id or a file named after one (`tk_0007.png`), or null. */
export function parseTakeNumber(name: string): number | null {
  const match = TAKE_NAME.exec(name);
  return match?.[1] === undefined ? null : Number(match[1]);
}

/** Take ids by number when both follow the scheme (`tk_9999` < `tk_10000`), else by code units. */
export function compareTakeIds(a: string, b: string): number {
  const na = parseTakeNumber(a);
  const nb = parseTakeNumber(b);
  if (na !== null && nb !== null && na !== nb) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The highest take number among file names in `dirs` (missing: empty), or 0; media files count, so a reserved id whose take file is not written yet is never reused. */
export async function findHighestTakeNumber(dirs: readonly string[]): Promise<number> {
  let highest = 0;
  for (const dir of dirs) {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
    for (const name of names) {
      const n = parseTakeNumber(name);
      if (n !== null && n > highest) highest = n;
    }
  }
  return highest;
}
