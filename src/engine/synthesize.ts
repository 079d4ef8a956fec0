/** Entity synthesis (engine-format.md §How entities are synthesised): pure functions from a {@link ProjectIndex} to route bodies, run in workers. */
import type { MissingCanonicalFieldDetail } from './errors.js';
import type { ProjectIndex, Shot, Take } from './project-index.js';

/** The one synthetic scene of every episode. */
export const SCENE_ID = 'main';

/** Recorded console state of a take (api-decisions.md §Mutations and lifecycle routes); absent means all false. */
export interface TakeState {
  readonly primary: boolean;
  readonly circled: boolean;
  readonly rejected: boolean;
}

/** Take states by take id, for one project. */
export type TakeStates = Readonly<Record<string, TakeState>>;

export type SynthesisQuery =
  | { readonly kind: 'episodes' }
  | { readonly kind: 'scenes'; readonly episodeId: string }
  | { readonly kind: 'beats'; readonly episodeId: string; readonly sceneId: string }
  | { readonly kind: 'takes'; readonly beatId: string }
  | { readonly kind: 'lineage'; readonly beatId: string; readonly takeId: string | null };

/** Outcome of a query: a JSON body (UTF-8 bytes, moved to the main thread), or the error the HTTP layer maps to a status. */
export type SynthesisOutcome = { readonly ok: true; readonly body: Uint8Array } | { readonly ok: false; readonly error: SynthesisError };

export type SynthesisError =
  | { readonly kind: 'not_found'; readonly what: 'episode' | 'scene' | 'lineage'; readonly message: string }
  | { readonly kind: 'legacy'; readonly reason: string }
  | { readonly kind: 'missing_field'; readonly detail: MissingCanonicalFieldDetail };

/** True when the query's answer depends on recorded take states. */
export function dependsOnTakeState(q: SynthesisQuery): boolean {
  return q.kind === 'takes' || q.kind === 'lineage';
}

const NO_STATE: TakeState = Object.freeze({ primary: false, circled: false, rejected: false });

/** Answers one query for one project. Unknown project: episodes and takes `[]`; scenes, beats and lineage not found. */
export function synthesize(index: ProjectIndex, q: SynthesisQuery, states: TakeStates): SynthesisOutcome {
  const { status } = index;
  const projectId = status.id;
  if (status.kind === 'legacy') return fail({ kind: 'legacy', reason: status.reason });
  if (status.kind === 'invalid') return fail({ kind: 'missing_field', detail: status.detail });
  if (index.invalid) return fail({ kind: 'missing_field', detail: index.invalid });

  switch (q.kind) {
    case 'episodes':
      return ok(
        [...index.episodes.values()].map((e) => ({
          id: String(e.number),
          project_id: projectId,
          number: e.number,
          title: `Episode ${e.number}`,
          synthesized: true,
          scene_count: 1,
          beat_count: e.beats.length,
          shot_count: e.beats.reduce((n, b) => n + b.shots.length, 0),
        })),
      );
    case 'scenes': {
      const ep = index.episodes.get(q.episodeId);
      if (!ep) return notFound('episode', `unknown episode ${q.episodeId} in project ${projectId}`);
      return ok([
        {
          id: SCENE_ID,
          project_id: projectId,
          episode_id: q.episodeId,
          title: 'Main',
          synthesized: true,
          beat_count: ep.beats.length,
        },
      ]);
    }
    case 'beats': {
      const ep = index.episodes.get(q.episodeId);
      if (!ep) return notFound('episode', `unknown episode ${q.episodeId} in project ${projectId}`);
      if (q.sceneId !== SCENE_ID) return notFound('scene', `unknown scene ${q.sceneId} in episode ${q.episodeId}`);
      return ok(
        ep.beats.map((b) => ({
          id: b.id,
          project_id: projectId,
          episode_id: q.episodeId,
          scene_id: SCENE_ID,
          order: Number.isFinite(b.order) ? b.order : null,
          shot_ids: b.shots.map((s) => s.shot_id),
          shot_count: b.shots.length,
          take_count: b.shots.reduce((n, s) => n + (index.takesByShot.get(s.shot_id)?.length ?? 0), 0),
        })),
      );
    }
    case 'takes': {
      const shots = index.shotsByBeat.get(q.beatId) ?? [];
      const out: unknown[] = [];
      for (const s of shots) for (const t of index.takesByShot.get(s.shot_id) ?? []) out.push(takeJson(t, states));
      return ok(out);
    }
    case 'lineage':
      return lineage(index, projectId, q.beatId, q.takeId, states);
  }
}

function takeJson(t: Take, states: TakeStates): Record<string, unknown> {
  const s = states[t.take_id] ?? NO_STATE;
  return { ...t.raw, parent_take_id: t.parent_take_id, primary: s.primary, circled: s.circled, rejected: s.rejected };
}

interface Node {
  readonly key: string;
  readonly kind: 'beat' | 'shot' | 'take';
  readonly id: string;
  readonly [member: string]: unknown;
}

/**
 * Lineage of a beat: the beat, its shots and their takes; edges beat→shot, shot→take for a take
 * without a parent in the beat, else parent→take. Rooted at a take: it and its ancestors only.
 */
function lineage(index: ProjectIndex, projectId: string, beatId: string, takeId: string | null, states: TakeStates): SynthesisOutcome {
  const noLineage = () => notFound('lineage', `no lineage for beat ${beatId}`);
  const shots = index.shotsByBeat.get(beatId);
  if (!shots || shots.length === 0) return noLineage();
  const shotIds = new Set(shots.map((s) => s.shot_id));

  let takes: Take[];
  if (takeId === null) {
    takes = shots.flatMap((s) => [...(index.takesByShot.get(s.shot_id) ?? [])]);
  } else {
    const leaf = index.takes.get(takeId);
    if (!leaf || !shotIds.has(leaf.shot_id)) return noLineage();
    // Walk parent links up; stop at a missing parent, one outside the beat, or a cycle.
    const chain: Take[] = [];
    const seen = new Set<string>();
    for (let t: Take | undefined = leaf; t && !seen.has(t.take_id) && shotIds.has(t.shot_id); ) {
      seen.add(t.take_id);
      chain.push(t);
      t = t.parent_take_id === null ? undefined : index.takes.get(t.parent_take_id);
    }
    takes = chain.reverse();
  }

  const inGraph = new Set(takes.map((t) => t.take_id));
  const usedShots: Shot[] = takeId === null ? [...shots] : shots.filter((s) => takes.some((t) => t.shot_id === s.shot_id));
  const first = shots[0] as Shot;
  const nodes: Node[] = [{ key: `beat:${beatId}`, kind: 'beat', id: beatId, episode_id: String(first.episode), order: finite(first.order) }];
  const edges: { from: string; to: string }[] = [];
  for (const s of usedShots) {
    nodes.push({ ...s.raw, key: `shot:${s.shot_id}`, kind: 'shot', id: s.shot_id });
    edges.push({ from: `beat:${beatId}`, to: `shot:${s.shot_id}` });
  }
  for (const t of takes) {
    nodes.push({ ...takeJson(t, states), key: `take:${t.take_id}`, kind: 'take', id: t.take_id });
    const parentInGraph = t.parent_take_id !== null && inGraph.has(t.parent_take_id);
    edges.push({ from: parentInGraph ? `take:${t.parent_take_id}` : `shot:${t.shot_id}`, to: `take:${t.take_id}` });
  }
  return ok({
    project_id: projectId,
    beat_id: beatId,
    root: takeId === null ? { kind: 'beat', id: beatId } : { kind: 'take', id: takeId },
    nodes,
    edges,
  });
}

function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

const encoder = new TextEncoder();

function ok(value: unknown): SynthesisOutcome {
  // Encoded here, in the worker: a body of many megabytes costs the main thread nothing.
  return { ok: true, body: encoder.encode(JSON.stringify(value)) };
}

function fail(error: SynthesisError): SynthesisOutcome {
  return { ok: false, error };
}

function notFound(what: 'episode' | 'scene' | 'lineage', message: string): SynthesisOutcome {
  return fail({ kind: 'not_found', what, message });
}
