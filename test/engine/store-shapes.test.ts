/**
 * Hostile JSON shapes against the store, property-based with fast-check,
 * through the real server: random nestings (depth up to 100,000, arrays and objects mixed,
 * siblings at each level), huge strings, text cut short, written as a project, shot or take
 * file of a fresh project. Whatever the shape: the answer is 200 or a 422 naming that file
 * (with the depth bound when the shape is too deep), never a 5xx; a 422 quotes nothing of the
 * file; and the other projects are served as before (the project list answers 200 with them).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { SENTINEL } from '../helpers/hostile-files.js';

const P = 'harbor-lights';
/** The default bounds (CONSOLE_STORE_JSON_MAX_DEPTH, CONSOLE_STORE_FILE_MAX_BYTES). */
const MAX_DEPTH = 64;
const MAX_BYTES = 4 * 1024 * 1024;
const RUNS = 120;

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await t.close();
});

interface Shape {
  /** Levels of containers around the leaf. */
  readonly depth: number;
  /** Array (true) or object (false), level by level, repeated. */
  readonly kinds: readonly boolean[];
  /** Siblings beside the nested value at each level. */
  readonly width: number;
  readonly leaf: unknown;
  /** Inside a valid entity (the shape as one of its members), or the whole file. */
  readonly wrap: boolean;
  /** Cut the text at this fraction of its length (invalid JSON), or keep it whole. */
  readonly cut: number | null;
  readonly target: 'project' | 'shot' | 'take';
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  depth: fc.oneof({ arbitrary: fc.integer({ min: 0, max: 80 }), weight: 3 }, { arbitrary: fc.integer({ min: 0, max: 100_000 }), weight: 1 }),
  kinds: fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
  width: fc.integer({ min: 0, max: 3 }),
  leaf: fc.oneof(
    fc.string().map((s) => `${SENTINEL}${s}`),
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: 0, max: 3_000_000 }).map((n) => `${SENTINEL}${'x'.repeat(n)}`),
  ),
  wrap: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
  cut: fc.oneof({ arbitrary: fc.constant(null), weight: 3 }, { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }), weight: 1 }),
  target: fc.constantFrom('project', 'shot', 'take'),
});

/** The shape's JSON text, built without recursion (100,000 levels deep is fine). */
function shapeText(s: Shape): string {
  const opens: string[] = [];
  const closes: string[] = [];
  for (let i = 0; i < s.depth; i++) {
    const array = s.kinds[i % s.kinds.length] as boolean;
    const siblings = Array.from({ length: s.width }, (_v, j) => (array ? `${j},` : `"s${j}":"${SENTINEL}",`)).join('');
    opens.push(array ? `[${siblings}` : `{${siblings}"k${i}":`);
    closes.push(array ? ']' : '}');
  }
  return `${opens.join('')}${JSON.stringify(s.leaf)}${closes.reverse().join('')}`;
}

/** The file's text, where it goes, and the route that reads it. */
function fileOf(s: Shape, id: string): { file: string; rel: string; route: string; text: string; whole: boolean } {
  const inner = shapeText(s);
  const entity =
    s.target === 'project'
      ? `{"format":2,"id":"${id}","title":"T","extra":`
      : s.target === 'shot'
        ? '{"shot_id":"sh_x","episode":1,"beat_id":"b01","extra":'
        : '{"take_id":"tk_x","shot_id":"sh010","extra":';
  const whole = s.wrap ? `${entity}${inner}}` : inner;
  const text = s.cut === null ? whole : whole.slice(0, Math.floor(whole.length * s.cut));
  const rel = s.target === 'project' ? `projects/${id}/project.json` : s.target === 'shot' ? `projects/${id}/shots/sh_x.json` : `projects/${id}/takes/tk_x.json`;
  const route = s.target === 'project' ? `/api/projects/${id}` : s.target === 'shot' ? `/api/projects/${id}/episodes` : `/api/beats/b01/takes?projectId=${id}`;
  // A cut at the very end (`cut` 1) leaves the file whole.
  return { file: path.join(t.dataDir, ...rel.split('/')), rel, route, text, whole: text === whole };
}

describe('random JSON shapes as store files', () => {
  it('answer 200 or a 422 naming the file, never a 5xx; other projects are unaffected', async () => {
    let n = 0;
    const figures = { runs: 0, ok: 0, unreadable: 0, deep: 0, syntax: 0, big: 0, other: 0, maxDepth: 0, maxBytes: 0 };
    await fc.assert(
      fc.asyncProperty(shapeArb, async (s) => {
        const id = `prop-${++n}`;
        const dir = path.join(t.dataDir, 'projects', id);
        fs.cpSync(path.join(t.dataDir, 'projects', P), dir, { recursive: true, filter: (src) => !src.includes(`${path.sep}media`) });
        fs.writeFileSync(path.join(dir, 'project.json'), JSON.stringify({ format: 2, id, title: 'Prop' }));
        const f = fileOf(s, id);
        fs.writeFileSync(f.file, f.text);
        figures.runs++;
        figures.maxDepth = Math.max(figures.maxDepth, s.depth);
        figures.maxBytes = Math.max(figures.maxBytes, Buffer.byteLength(f.text));

        const res = await t.get(f.route);
        const body = await res.text();
        expect(res.status, `${f.route}: ${body.slice(0, 300)}`).toBeLessThan(500);
        expect([200, 422], f.route).toContain(res.status);
        const fileDepth = s.depth + (s.wrap ? 1 : 0);
        const tooBig = Buffer.byteLength(f.text) > MAX_BYTES;
        if (res.status === 200) {
          figures.ok++;
          // Only a whole, wrapped shape within the bounds is served.
          expect(s.wrap && f.whole && fileDepth <= MAX_DEPTH && !tooBig, `${f.route} served ${JSON.stringify({ ...s, leaf: typeof s.leaf })}`).toBe(true);
        } else {
          figures.unreadable++;
          const detail = JSON.parse(body).detail;
          expect(detail).toMatchObject({ error: 'missing_canonical_field', project_id: id });
          expect(detail.remediation).toContain(` in ${f.rel};`);
          expect(body).not.toContain(SENTINEL);
          if (/nested deeper than 64 levels/.test(detail.remediation)) figures.deep++;
          else if (/invalid JSON at line \d+ column \d+/.test(detail.remediation)) figures.syntax++;
          else if (/larger than \d+ bytes/.test(detail.remediation)) figures.big++;
          else figures.other++;
          if (tooBig) expect(detail.remediation).toMatch(/larger than 4194304 bytes, CONSOLE_STORE_FILE_MAX_BYTES/);
          else if (s.cut === null && fileDepth > MAX_DEPTH) expect(detail.remediation).toMatch(/nested deeper than 64 levels at line 1 column \d+, CONSOLE_STORE_JSON_MAX_DEPTH/);
        }
        // Every other project is served: the list answers with them, and a neighbour's routes.
        const list = await t.get('/api/projects');
        const ids = ((await list.json()) as { id: string }[]).map((p) => p.id);
        expect(list.status).toBe(200);
        expect(ids).toEqual(expect.arrayContaining([P, 'night-market']));
        expect((await t.get(`/api/projects/night-market/episodes`)).status).toBe(200);
        fs.rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    console.log(`store-shapes: ${JSON.stringify(figures)}`);
    expect(figures.runs).toBe(RUNS);
  }, 600_000);
});
