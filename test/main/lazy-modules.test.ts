/**
 * What an instance on the defaults loads (every module loaded is memory of every instance): `pg` (cluster mode, src/main/postgres-backend.ts), `pino-pretty` (LOG_FORMAT=pretty,
 * logger.ts) and `http-proxy-middleware` (SERVICE_WRITE_UPSTREAM, write-proxy.ts) are loaded
 * only when their feature is on, so no static import from the service's entry reaches them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/service.js';

const ENTRY = path.join(REPO_ROOT, 'src', 'main', 'index.ts');
const ON_DEMAND = ['pg', 'pino-pretty', 'http-proxy-middleware'];

/** The packages the static imports (`import … from`, `export … from`, `import '…'`) from `entry` reach, each with the first file importing it. */
function staticPackages(entry: string): Map<string, string> {
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s)?['"]([^'"]+)['"]/g)) {
      const spec = m[1] as string;
      const typeOnly = /^\s*(?:import|export)\s+type\s/.test(m[0]);
      if (typeOnly) continue;
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'));
      else if (!spec.startsWith('node:')) {
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
        if (!packages.has(name)) packages.set(name, path.relative(REPO_ROOT, file));
      }
    }
  };
  visit(entry);
  return packages;
}

it('loads pg, pino-pretty and http-proxy-middleware only when their feature is on', () => {
  const packages = staticPackages(ENTRY);
  // The walk itself works: packages every instance needs are found.
  expect([...packages.keys()]).toEqual(expect.arrayContaining(['express', 'piscina', 'pino']));
  const reached = ON_DEMAND.filter((p) => packages.has(p)).map((p) => `${p} (imported by ${packages.get(p)})`);
  expect(reached).toEqual([]);
});
