/**
 * The import graph of src/ (ARCHITECTURE.md): every relative import and re-export, static or
 * dynamic, as [importing file, imported file] relative to src/, and the graph of folders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './service.js';

export const SRC = path.join(REPO_ROOT, 'src');

/** Every relative import of src/**: [importing file, imported file], both relative to src. */
export function imports(): [string, string][] {
  const out: [string, string][] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const text = fs.readFileSync(p, 'utf8');
        const specs = [
          ...[...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]/g)].map((m) => m[1] as string),
          ...[...text.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1] as string),
        ];
        for (const spec of specs) {
          const target = path.resolve(path.dirname(p), spec).replace(/\.js$/, '.ts');
          out.push([path.relative(SRC, p), path.relative(SRC, target)]);
        }
      }
    }
  };
  walk(SRC);
  return out;
}

/** The folder of a file relative to src (its first segment). */
export const folderOf = (file: string): string => file.split(path.sep)[0] as string;

/** The edges between folders, `from -> to`, sorted. */
export function folderEdges(): string[] {
  const edges = new Set<string>();
  for (const [from, to] of imports()) {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a !== b && !b.endsWith('.ts')) edges.add(`${a} -> ${b}`);
  }
  return [...edges].sort();
}
