/**
 * Every canonical-field problem of one store file, by the service's own rules. The service stops
 * at the first; here the member is set in memory to its derived value or a stand-in, and re-checked.
 */
import { fixCli, missingFieldReason, type MissingCanonicalFieldDetail } from '../engine/errors.js';
import { classifyProjectRead } from '../engine/project-file.js';
import { parseShot, parseTake, type Parsed } from '../engine/project-index.js';
import type { StoreRead } from '../engine/store-read.js';
import { parseMemoryEntry } from '../engine/store-reads.js';
import { titleFromId, type Derivation, type EntityKind, type Finding } from './findings.js';

/** How one canonical member is repaired: derived (by `--fix`) or by hand, with a stand-in to go on checking. */
type Resolution = { readonly derived: Derivation } | { readonly byHand: string; readonly standIn: unknown };

type Check = (doc: Record<string, unknown>) => MissingCanonicalFieldDetail | null;

/** Bound on re-checks of one file: more than the canonical members of any kind of file. */
const MAX_ROUNDS = 8;

/** Checks `project.json` of project `id`, `read` as the service reads it; `hasYaml`: a `project.yaml` lies beside it. */
export function checkProjectJson(id: string, read: StoreRead<unknown>, hasYaml: boolean): Finding[] {
  const file = `projects/${id}/project.json`;
  const check: Check = (doc) => {
    const s = classifyProjectRead(id, { kind: 'ok', value: doc }, hasYaml);
    return s.kind === 'invalid' ? s.detail : null;
  };
  const first = classifyProjectRead(id, read, hasYaml);
  if (first.kind !== 'invalid') return [];
  const doc = read.kind === 'ok' ? asObject(read.value) : null;
  if (doc === null) return [unreadable(first.detail, file, 'project', read.kind === 'problem' ? read.problem.fix : NOT_AN_OBJECT_FIX)];
  return collect(doc, check, file, 'project', id, (field, d) => {
    switch (field) {
      case 'format':
        // Only an absent member is derived: a project.yaml beside it, or a format of another
        // type, means the file may not be a format-2 project at all.
        return d.format === undefined && !hasYaml
          ? { derived: { value: 2, placeholder: false } }
          : { byHand: hasYaml ? 'the integer 2, or remove project.json and run the migrate command' : 'the integer 2', standIn: 2 };
      case 'id':
        return { derived: { value: id, placeholder: false } };
      case 'title':
        return blank(d.title) ? { derived: { value: titleFromId(id), placeholder: true } } : { byHand: 'a non-empty string', standIn: titleFromId(id) };
      default:
        return { byHand: 'see engine-format.md', standIn: 'x' };
    }
  });
}

/** Checks `shots/<file>` of project `projectId`. */
export function checkShot(projectId: string, file: string, parsed: Parsed): Finding[] {
  const where = `projects/${projectId}/shots/${file}`;
  const check: Check = (doc) => errorOf(parseShot(projectId, file, { doc }));
  if ('unreadable' in parsed) return [unreadable(errorOf(parseShot(projectId, file, parsed))!, where, 'shot', parsed.fix)];
  const stem = file.slice(0, -'.json'.length);
  return collect(parsed.doc, check, where, 'shot', projectId, (field) => {
    switch (field) {
      case 'shot_id':
        return { derived: { value: stem, placeholder: false } };
      case 'episode':
        return { byHand: "an integer ≥ 0: the shot's episode number", standIn: 0 };
      case 'beat_id':
        return { byHand: "an identifier (letters, digits, '.', '_', '-'): the shot's beat", standIn: 'b' };
      default:
        return { byHand: 'see engine-format.md', standIn: 'x' };
    }
  });
}

/** Checks `takes/<file>` of project `projectId`. */
export function checkTake(projectId: string, file: string, parsed: Parsed): Finding[] {
  const where = `projects/${projectId}/takes/${file}`;
  const check: Check = (doc) => errorOf(parseTake(projectId, file, { doc }));
  if ('unreadable' in parsed) return [unreadable(errorOf(parseTake(projectId, file, parsed))!, where, 'take', parsed.fix)];
  const stem = file.slice(0, -'.json'.length);
  return collect(parsed.doc, check, where, 'take', projectId, (field) => {
    switch (field) {
      case 'take_id':
        return { derived: { value: stem, placeholder: false } };
      case 'shot_id':
        return { byHand: "the id of the take's shot (a file name under shots/, without .json)", standIn: 'x' };
      default:
        return { byHand: 'see engine-format.md', standIn: 'x' };
    }
  });
}

/** Checks `memory/<name>`; an unreadable file is reported as the service does (canonical `id` cannot be read). */
export function checkMemoryEntry(name: string, parsed: Parsed): Finding[] {
  const where = `memory/${name}`;
  const first = parseMemoryEntry(name, parsed);
  if (!('error' in first)) return [];
  if (!('doc' in parsed)) return [unreadable(first.error, where, 'memory', parsed.fix)];
  const doc = parsed.doc;
  const projectId = typeof doc.project_id === 'string' ? doc.project_id : null;
  const check: Check = (d) => errorOf(parseMemoryEntry(name, { doc: d }));
  const stem = name.slice(0, -'.json'.length);
  return collect(doc, check, where, 'memory', projectId, (field) => (field === 'id' ? { derived: { value: stem, placeholder: false } } : { byHand: "the entry's text, a string", standIn: '' }));
}

function collect(
  doc0: Record<string, unknown>,
  check: Check,
  file: string,
  entity: EntityKind,
  projectId: string | null,
  resolve: (field: string, doc: Record<string, unknown>) => Resolution,
): Finding[] {
  const out: Finding[] = [];
  let doc = { ...doc0 };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const detail = check(doc);
    if (detail === null) break;
    if (out.some((f) => f.field === detail.field)) break; // no progress: the stand-in did not satisfy the rule
    const r = resolve(detail.field, doc);
    const base = {
      severity: 'error',
      code: 'missing_canonical_field',
      project_id: projectId,
      file,
      entity,
      field: detail.field,
      problem: missingFieldReason(detail),
    } as const;
    if ('derived' in r) {
      const shown = `${JSON.stringify(r.derived.value)}${r.derived.placeholder ? ', a placeholder to replace' : ''}`;
      out.push({ ...base, fix: `${fixCli(projectId)} (sets it to ${shown})`, derived: r.derived });
      doc = { ...doc, [detail.field]: r.derived.value };
    } else {
      out.push({ ...base, fix: `set "${detail.field}" by hand in ${file}: ${r.byHand}`, derived: null });
      doc = { ...doc, [detail.field]: r.standIn };
    }
  }
  return out;
}

const NOT_AN_OBJECT_FIX = 'make it a JSON object (see engine-format.md)';

/** A file that cannot be checked member by member: its problem and its own fix (for invalid JSON, where the syntax breaks). */
function unreadable(detail: MissingCanonicalFieldDetail, file: string, entity: EntityKind, fix: string | undefined): Finding {
  return {
    severity: 'error',
    code: 'missing_canonical_field',
    project_id: detail.project_id,
    file,
    entity,
    field: detail.field,
    problem: missingFieldReason(detail),
    fix: `repair ${file} by hand: ${fix ?? NOT_AN_OBJECT_FIX}`,
    derived: null,
  };
}

function errorOf(r: object): MissingCanonicalFieldDetail | null {
  return 'error' in r ? (r.error as MissingCanonicalFieldDetail) : null;
}

function asObject(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function blank(v: unknown): boolean {
  return v === undefined || v === null || v === '';
}
