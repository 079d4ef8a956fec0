import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Chooses the engine store root (engine-format.md): `configured` (CONSOLE_DATA_DIR) resolved
 * against the cwd, else the bundled `sample-store/` found from `moduleUrl` (src/ or dist/).
 * @returns an absolute path, not checked for existence.
 */
export function resolveStoreRoot(configured: string | undefined, moduleUrl: string): string {
  if (configured !== undefined && configured.trim() !== '') return path.resolve(configured);
  return fileURLToPath(new URL('../../sample-store/', moduleUrl));
}
