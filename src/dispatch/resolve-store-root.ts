import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Chooses the engine store root (engine-format.md, opening section).
 * @param configured the value of `CONSOLE_DATA_DIR`; unset or empty means "not configured".
 *   A relative value is resolved against the working directory.
 * @param moduleUrl `import.meta.url` of a module two directories below the repository root
 *   (`src/dispatch/*.ts` or `dist/dispatch/*.js`), so the bundled `sample-store/` is found
 *   from either the sources or the build.
 * @returns an absolute directory path; its existence is not checked here.
 */
export function resolveStoreRoot(configured: string | undefined, moduleUrl: string): string {
  if (configured !== undefined && configured.trim() !== '') return path.resolve(configured);
  return fileURLToPath(new URL('../../sample-store/', moduleUrl));
}
