/**
 * Generates a large engine store for the benchmarks: one format-2
 * project with `--shots` shots spread over episodes and beats, and `--takes` takes with
 * parent chains and siblings. Usage:
 *   node bench/.work/dist/generate-store.js <dir> [--shots 10000] [--takes 50000]
 * Writes `<dir>/.complete` last, so a half-written store is never reused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

export const BENCH_PROJECT = 'bench-epic';
export const EPISODES = 20;
/** 50 beats of 10 shots per episode: about 500 shots an episode, in story-sized beats. */
export const BEATS_PER_EPISODE = 50;

export interface StoreShape {
  readonly shots: number;
  readonly takes: number;
  readonly beatsPerEpisode: number;
}

/** Beat id of beat `b` (0-based) of episode `e` (1-based). */
export const beatId = (e: number, b: number) => `e${String(e).padStart(2, '0')}b${String(b + 1).padStart(3, '0')}`;

/** Writes the store under `dir` unless a complete one with the same shape is there. */
export function generateStore(dir: string, shape: StoreShape): void {
  const marker = path.join(dir, '.complete');
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === JSON.stringify(shape)) return;
  fs.rmSync(dir, { recursive: true, force: true });
  const proj = path.join(dir, 'projects', BENCH_PROJECT);
  for (const sub of ['shots', 'takes', 'media']) fs.mkdirSync(path.join(proj, sub), { recursive: true });
  fs.mkdirSync(path.join(dir, 'memory'), { recursive: true });
  fs.writeFileSync(
    path.join(proj, 'project.json'),
    JSON.stringify({ format: 2, id: BENCH_PROJECT, title: 'Bench Epic', logline: 'A generated store for benchmarks.', created_at: '2026-01-01T00:00:00Z' }),
  );
  fs.writeFileSync(path.join(dir, 'memory', 'bench-note.json'), JSON.stringify({ id: 'bench-note', text: 'generated', enabled: true, project_id: null }));

  const shotsPerEpisode = Math.ceil(shape.shots / EPISODES);
  const shotsPerBeat = Math.ceil(shotsPerEpisode / shape.beatsPerEpisode);
  const takesPerShot = Math.max(1, Math.round(shape.takes / shape.shots));
  let takeNo = 0;
  for (let i = 0; i < shape.shots; i++) {
    const episode = Math.floor(i / shotsPerEpisode) + 1;
    const inEpisode = i % shotsPerEpisode;
    const beat = beatId(episode, Math.floor(inEpisode / shotsPerBeat));
    const shotId = `s${String(i + 1).padStart(5, '0')}`;
    fs.writeFileSync(
      path.join(proj, 'shots', `${shotId}.json`),
      JSON.stringify({ shot_id: shotId, episode, beat_id: beat, order: inEpisode * 10, description: `Shot ${i + 1} of the epic.`, duration_s: 3.5 }),
    );
    // Per shot: a chain t1 <- t2 <- t3 <- t5 and a sibling t4 of t2 (parent t1).
    const ids: string[] = [];
    for (let k = 0; k < takesPerShot && takeNo < shape.takes; k++) {
      const takeId = `tk_${String(++takeNo).padStart(6, '0')}`;
      const parent = k === 0 ? null : k === 3 ? ids[0] : ids[k === 4 ? 2 : k - 1];
      ids.push(takeId);
      fs.writeFileSync(
        path.join(proj, 'takes', `${takeId}.json`),
        JSON.stringify({
          take_id: takeId,
          shot_id: shotId,
          parent_take_id: parent ?? null,
          model: 'local-testsrc-v1',
          created_at: new Date(Date.UTC(2026, 0, 1) + takeNo * 1000).toISOString(),
          media: `media/${takeId}.png`,
        }),
      );
    }
  }
  fs.writeFileSync(marker, JSON.stringify(shape));
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { shots: { type: 'string' }, takes: { type: 'string' } } });
  const dir = positionals[0];
  if (!dir) {
    process.stderr.write('usage: generate-store <dir> [--shots N] [--takes N]\n');
    process.exit(2);
  }
  const shots = Number(values.shots ?? 10_000);
  generateStore(path.resolve(dir), { shots, takes: Number(values.takes ?? 50_000), beatsPerEpisode: BEATS_PER_EPISODE });
  process.stdout.write(`${JSON.stringify({ dir: path.resolve(dir), shots })}\n`);
}
