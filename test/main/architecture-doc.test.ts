/**
 * ARCHITECTURE.md's graph of folders is the graph of src/'s imports: every edge it draws is an
 * import between two folders, and every such import is drawn. Edit the mermaid block when an
 * import between folders comes or goes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { folderEdges } from '../helpers/folder-graph.js';
import { REPO_ROOT } from '../helpers/service.js';

it('draws exactly the imports between folders', () => {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'ARCHITECTURE.md'), 'utf8');
  const block = /```mermaid\n([\s\S]*?)```/.exec(doc)?.[1];
  expect(block, 'a mermaid block in ARCHITECTURE.md').toBeDefined();
  const drawn = [...(block as string).matchAll(/^\s*([\w-]+)\s*-->\s*([\w-]+)\s*$/gm)].map((m) => `${m[1]} -> ${m[2]}`).sort();
  expect(drawn).toEqual(folderEdges());
});

it('names every folder of src/ in its table of folders', () => {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'ARCHITECTURE.md'), 'utf8');
  const folders = fs
    .readdirSync(path.join(REPO_ROOT, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  expect(folders.filter((f) => !doc.includes(`| \`src/${f}\` |`))).toEqual([]);
});
