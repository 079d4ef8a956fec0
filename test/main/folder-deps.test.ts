/**
 * The folders' dependencies point one way (ARCHITECTURE.md): the import statements of src/**
 * make a graph of folders with no cycle; src/main, the composition root, is the top floor
 * that no other folder imports; the configuration (src/config) is a leaf below everything
 * but the error base class; the operations folder (src/ops: logger, guards, readiness) sits
 * below the HTTP app and imports no folder of the service's own work.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { folderOf, imports, SRC } from '../helpers/folder-graph.js';
import { REPO_ROOT } from '../helpers/service.js';

it('has no import cycle between source folders', () => {
  const edges = new Map<string, Set<string>>();
  for (const [from, to] of imports()) {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a === b || b.endsWith('.ts')) continue;
    if (!edges.has(a)) edges.set(a, new Set());
    edges.get(a)?.add(b);
  }
  // Depth-first search for a back edge; the cycle found is named in the failure.
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (n: string, trail: string[]): void => {
    state.set(n, 'open');
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') cycles.push([...trail.slice(trail.indexOf(m)), n, m].join(' -> '));
      else if (!state.has(m)) visit(m, [...trail, n]);
    }
    state.set(n, 'done');
  };
  for (const n of edges.keys()) if (!state.has(n)) visit(n, []);
  expect(cycles).toEqual([]);
  // These pairs must point one way (ARCHITECTURE.md).
  expect(edges.get('workers')?.has('engine')).toBe(true);
  expect(edges.get('engine')?.has('workers') ?? false).toBe(false);
  expect(edges.get('state')?.has('bus')).toBe(true);
  expect(edges.get('bus')?.has('state') ?? false).toBe(false);
});

it('imports src/main from src/main only: it is the top floor', () => {
  const into = imports().filter(([from, to]) => folderOf(to) === 'main' && folderOf(from) !== 'main');
  expect(into).toEqual([]);
});

it('keeps the configuration a leaf and the operations folder below the service’s work', () => {
  const edges = (folder: string): string[] =>
    [
      ...new Set(
        imports()
          .filter(([from, to]) => folderOf(from) === folder && folderOf(to) !== folder)
          .map(([, to]) => folderOf(to)),
      ),
    ].sort();
  expect(edges('config')).toEqual(['errors']);
  expect(edges('ops').filter((f) => !['config', 'errors', 'registry'].includes(f))).toEqual([]);
  expect(edges('errors')).toEqual([]);
});

it('reads the version from package.json only', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const quoted = new RegExp(`['"\`]${pkg.version.replace(/\./g, '\\.')}['"\`]`);
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && quoted.test(fs.readFileSync(p, 'utf8'))) files.push(path.relative(SRC, p));
    }
  };
  walk(SRC);
  expect(files).toEqual([]);
});
