import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The store root: `configured` (CONSOLE_DATA_DIR) against the cwd, else the bundled `sample-store/` found from `moduleUrl`; absolute, not checked. */
export function resolveStoreRoot(configured: string | undefined, moduleUrl: string): string {
  if (configured !== undefined && configured.trim() !== '') return path.resolve(configured);
  return fileURLToPath(new URL('../../sample-store/', moduleUrl));
}
