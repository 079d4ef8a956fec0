/** What the engine doctor reports, one finding per problem in the shape `--json` prints: errors are the service's 410s and 422s; warnings do not break it. */

export type Severity = 'error' | 'warning';

export type FindingCode =
  /** A legacy (format 1) project: 410 `legacy project format: <reason>`. */
  | 'legacy_format'
  /** A canonical field missing, mismatched or unreadable: 422 MissingCanonicalField. */
  | 'missing_canonical_field'
  /** A take's `parent_take_id` names no take file (warning). */
  | 'unknown_parent_take'
  /** A take's `shot_id` names no shot file (warning). */
  | 'unknown_shot'
  /** A take's `media` names a file that does not exist (warning). */
  | 'missing_media'
  /** A take's `media` points outside its project's directory (warning). */
  | 'media_outside_project'
  /** A directory under `projects/` whose name is not a valid id: the service ignores it (warning). */
  | 'ignored_directory';

/** The kind of file a finding is about; decides the canonical member order when `--fix` rewrites it. */
export type EntityKind = 'project' | 'shot' | 'take' | 'memory';

/** A value `doctor --fix` sets, derived from the file's own name or its directory. */
export interface Derivation {
  readonly value: unknown;
  /** True when the value is only a stand-in a person should replace (a title made from the id). */
  readonly placeholder: boolean;
}

export interface Finding {
  readonly severity: Severity;
  readonly code: FindingCode;
  /** The project concerned; for a memory entry its `project_id` (null for a store-wide entry). */
  readonly project_id: string | null;
  /** Path relative to the store root, with `/` separators. */
  readonly file: string;
  readonly entity: EntityKind | null;
  /** The member concerned, or null when the finding is about the whole file. */
  readonly field: string | null;
  /** What is wrong, e.g. `is missing`, `does not match the file name "sh010"`. */
  readonly problem: string;
  /** What to do: the command that fixes it, or the exact member to set by hand. */
  readonly fix: string;
  /** What `doctor --fix` sets; null when the value cannot be derived safely. */
  readonly derived: Derivation | null;
}

/** One change made by `doctor --fix`. `from` is absent when the member was missing. */
export interface Change {
  readonly file: string;
  readonly field: string;
  readonly from?: unknown;
  readonly to: unknown;
  readonly placeholder: boolean;
}

/** Canonical members of each kind of file, first in the order `--fix` writes them. */
export const CANONICAL_ORDER: Readonly<Record<EntityKind, readonly string[]>> = {
  project: ['format', 'id', 'title'],
  shot: ['shot_id', 'episode', 'beat_id'],
  take: ['take_id', 'shot_id', 'parent_take_id'],
  memory: ['id', 'text'],
};

/** `doc` with `sets` applied, the canonical members of `kind` first in canonical order, then the others in their own order. */
export function withMembers(kind: EntityKind, doc: Readonly<Record<string, unknown>>, sets: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...doc };
  for (const [k, v] of sets) merged[k] = v;
  const out: Record<string, unknown> = {};
  for (const k of CANONICAL_ORDER[kind]) if (k in merged) out[k] = merged[k];
  for (const k of Object.keys(merged)) if (!(k in out)) out[k] = merged[k];
  return out;
}

/** `night-market` → `Night Market`: the placeholder title derived from a project id. */
export function titleFromId(id: string): string {
  return id
    .split(/[-_.]+/)
    .filter((w) => w.length > 0)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(' ');
}
