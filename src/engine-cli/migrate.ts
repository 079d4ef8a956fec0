/**
 * `engine migrate`: converts a legacy (format 1) project to format 2 (engine-format.md,
 * "Legacy format"; the mapping is in legacy-mapping.ts). Nothing is deleted: every legacy
 * file is kept under the project's `legacy/` folder.
 *
 * Order of work, so that a run stopped at any point can simply be run again:
 *  1. copy every legacy file into `legacy/` (the project file last: its copy marks the end
 *     of this step, and from then on the sources are read from `legacy/`);
 *  2. write `shots/*.json` and `takes/*.json`;
 *  3. write `project.json` with format 2: the project turns format 2 at this single rename;
 *  4. remove the legacy files left beside the new ones (only when identical to their copy).
 * Every write is atomic (temp file + rename). A project already migrated (format 2 with its
 * project file under `legacy/`) is left as it is, apart from finishing step 4; a format-2
 * project that was never migrated is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { missingFieldReason } from '../engine/errors.js';
import { classifyProject, projectDir, readProjectStatusSync } from '../engine/project-file.js';
import { listEntityFiles, parseShot, parseTake } from '../engine/project-index.js';
import { readStoreFileSync, type StoreAccess } from '../engine/read-store-file.js';
import { parseStoreJson } from '../engine/store-json.js';
import { defaultAccess } from './doctor.js';
import { mapProject, mapShot, mapTake, type Mapped } from './legacy-mapping.js';
import { copyFileAtomic, storeJson, writeFileAtomic } from './write-atomic.js';

/** One step of a migration; paths are relative to the project directory, with `/` separators. */
export type MigrationStep =
  | { readonly action: 'preserve'; readonly file: string; readonly to: string }
  | {
      readonly action: 'write';
      readonly file: string;
      readonly from: string;
      readonly notes: readonly string[];
      readonly doc: Readonly<Record<string, unknown>>;
    }
  | { readonly action: 'remove'; readonly file: string; readonly kept: string };

/**
 * - `legacy`: a legacy project, migrated from its own files;
 * - `interrupted`: a legacy project whose files were already copied to `legacy/` by a run that
 *   stopped: migrated from the copies;
 * - `migrated`: already format 2 with its legacy files under `legacy/`;
 * - `format2`: a format-2 project that was never migrated (refused).
 */
export type MigrationState = 'legacy' | 'interrupted' | 'migrated' | 'format2';

export interface MigrationPlan {
  readonly project_id: string;
  /** Absolute project directory. */
  readonly dir: string;
  /** The legacy reason (`format 1 (project.yaml)`, `format 1`), or null when not legacy. */
  readonly reason: string | null;
  readonly state: MigrationState;
  readonly steps: readonly MigrationStep[];
  /** Why the project cannot be migrated, one line each naming the file; empty when it can. */
  readonly problems: readonly string[];
}

const LEGACY = 'legacy';
const SOURCE_EXT = /\.(json|ya?ml)$/;

/**
 * Plans the migration of project `id` (which must exist) without writing anything. Sources
 * are read as the service reads store files (`access`: no pipe, no link out of the project).
 * @throws an fs error other than a missing file.
 */
export function planMigration(root: string, id: string, access: StoreAccess = defaultAccess(root)): MigrationPlan {
  const dir = projectDir(root, id);
  const status = readProjectStatusSync(access, id);
  const mapSources = (base: string, projectFile: string) => mapSourcesOf(access, id, path.relative(dir, base), base, projectFile);
  const at = (...parts: string[]) => path.join(dir, ...parts);
  if (status.kind !== 'legacy') {
    const projectFile = fs.existsSync(at(LEGACY, 'project.json')) ? 'project.json' : 'project.yaml';
    if (!fs.existsSync(at(LEGACY, projectFile))) {
      const why =
        status.kind === 'invalid'
          ? `project.json is not legacy (format ≥ 2 or unreadable) but has problems: run npm run engine -- doctor --project ${id}`
          : 'the project is already format 2: nothing to migrate';
      return { project_id: id, dir, reason: null, state: 'format2', steps: [], problems: [why] };
    }
    // Migrated earlier: only legacy files a stopped run left beside the new ones are removed.
    const mapped = mapSources(at(LEGACY), projectFile);
    const steps = mapped.problems.length > 0 ? [] : removals(dir, mapped);
    return { project_id: id, dir, reason: null, state: 'migrated', steps, problems: [] };
  }

  const projectFile = status.reason.includes('project.yaml') ? 'project.yaml' : 'project.json';
  const resumed = fs.existsSync(at(LEGACY, projectFile));
  const mapped = mapSources(resumed ? at(LEGACY) : dir, projectFile);
  const steps: MigrationStep[] = [];
  if (!resumed) {
    // The project file is copied last: its copy tells a later run that every copy is made.
    const order = [...mapped.sources.filter((s) => s !== projectFile), projectFile];
    for (const s of order) steps.push({ action: 'preserve', file: s, to: `${LEGACY}/${s}` });
  }
  for (const w of mapped.writes.filter((x) => x.file !== 'project.json')) steps.push({ action: 'write', ...w });
  for (const w of mapped.writes.filter((x) => x.file === 'project.json')) steps.push({ action: 'write', ...w });
  steps.push(...removals(dir, mapped, !resumed));
  return {
    project_id: id,
    dir,
    reason: status.reason,
    state: resumed ? 'interrupted' : 'legacy',
    steps: mapped.problems.length > 0 ? [] : steps,
    problems: mapped.problems,
  };
}

/**
 * Carries out a plan's steps in order (see the module comment). Call only with a plan that
 * has no problems. @throws the fs error of the step that failed; a new run resumes.
 */
export function executeMigration(plan: MigrationPlan): void {
  const at = (rel: string) => path.join(plan.dir, ...rel.split('/'));
  for (const step of plan.steps) {
    switch (step.action) {
      case 'preserve':
        copyFileAtomic(at(step.file), at(step.to));
        break;
      case 'write':
        writeFileAtomic(at(step.file), storeJson(step.doc));
        break;
      case 'remove':
        fs.rmSync(at(step.file), { force: true });
        break;
    }
  }
}

interface MappedSources {
  /** Legacy files, relative to the project directory (project file, shots/…, takes/…). */
  readonly sources: readonly string[];
  readonly writes: readonly { file: string; from: string; notes: readonly string[]; doc: Record<string, unknown> }[];
  readonly problems: string[];
  /** Where the sources were read from (the project directory or its `legacy/`). */
  readonly base: string;
}

/**
 * @param sub the folder of the sources inside the project's folder: '' or `legacy`.
 * @param base the same folder, absolute.
 */
function mapSourcesOf(access: StoreAccess, id: string, sub: string, base: string, projectFile: string): MappedSources {
  const within = `projects/${id}`;
  const folder = sub === '' ? within : `${within}/${sub.split(path.sep).join('/')}`;
  const readLegacy = (rel: string, problems: string[]) => readLegacySource(access, within, `${folder}/${rel}`, rel, problems);
  const problems: string[] = [];
  const writes: { file: string; from: string; notes: readonly string[]; doc: Record<string, unknown> }[] = [];
  const sources: string[] = [projectFile];
  // A project.yaml beside a format-1 project.json is kept too, though not read (project.json wins).
  if (projectFile === 'project.json' && fs.existsSync(path.join(base, 'project.yaml'))) sources.push('project.yaml');

  const projectDoc = readLegacy(projectFile, problems);
  if (projectDoc) {
    const m = mapProject(id, projectDoc);
    const s = classifyProject(id, JSON.stringify(m.doc), false);
    if (s.kind !== 'ok') problems.push(`${projectFile}: cannot be mapped (${s.kind === 'invalid' ? missingFieldReason(s.detail) : s.kind})`);
    add(m, 'project.json', projectFile);
  }

  const outputs = new Map<string, string>();
  for (const kind of ['shots', 'takes'] as const) {
    const listed = listEntityFiles(access, `${folder}/${kind}`, within, SOURCE_EXT);
    if (listed.kind === 'problem') problems.push(`${kind}: cannot be read (${listed.problem.why})`);
    for (const name of listed.kind === 'ok' ? listed.value.entries.map((d) => d.name) : []) {
      const rel = `${kind}/${name}`;
      sources.push(rel);
      const doc = readLegacy(rel, problems);
      if (!doc) continue;
      const stem = name.replace(SOURCE_EXT, '');
      const m = kind === 'shots' ? mapShot(stem, doc) : mapTake(stem, doc);
      if (m.id === null) {
        add(m, '', rel);
        continue;
      }
      const out = `${kind}/${m.id}.json`;
      const earlier = outputs.get(out);
      if (earlier !== undefined) problems.push(`${rel}: gives ${out} like ${earlier}: keep one of them`);
      outputs.set(out, rel);
      if (m.problems.length === 0) {
        const check = kind === 'shots' ? parseShot(id, `${m.id}.json`, { doc: m.doc }) : parseTake(id, `${m.id}.json`, { doc: m.doc });
        if ('error' in check) problems.push(`${rel}: cannot be mapped ("${check.error.field}" ${missingFieldReason(check.error)})`);
      }
      add(m, out, rel);
    }
  }
  return { sources, writes, problems, base };

  function add(m: Mapped, file: string, from: string): void {
    for (const p of m.problems) problems.push(`${from}: ${p}`);
    if (m.problems.length === 0 && file !== '') writes.push({ file, from, notes: m.notes, doc: m.doc });
  }
}

/**
 * Legacy files left in the project directory that are not new files: removed, since their copy
 * is under `legacy/`. With `fresh` the copies are made by this very run; otherwise a file is
 * removed only when it is identical to its copy (it may have been edited since).
 */
function removals(dir: string, mapped: MappedSources, fresh = false): MigrationStep[] {
  const outputs = new Set(mapped.writes.map((w) => w.file));
  const steps: MigrationStep[] = [];
  for (const rel of mapped.sources) {
    if (outputs.has(rel)) continue;
    const top = path.join(dir, ...rel.split('/'));
    if (!fs.existsSync(top)) continue;
    if (!fresh && !sameBytes(top, path.join(dir, LEGACY, ...rel.split('/')))) continue;
    steps.push({ action: 'remove', file: rel, kept: `${LEGACY}/${rel}` });
  }
  return steps;
}

/** One legacy source: `storeRel` its store-relative path, `rel` the name problems give; a syntax error gives a position, never the text. */
function readLegacySource(access: StoreAccess, within: string, storeRel: string, rel: string, problems: string[]): Record<string, unknown> | null {
  const bytes = readStoreFileSync(access, storeRel, within);
  if (bytes.kind !== 'ok') {
    problems.push(`${rel}: cannot be read (${bytes.kind === 'absent' ? 'no such file' : bytes.problem.why})`);
    return null;
  }
  let v: unknown;
  if (rel.endsWith('.json')) {
    const parsed = parseStoreJson(bytes.value, access.maxDepth);
    if (parsed.kind !== 'ok') {
      problems.push(`${rel}: cannot be read (${parsed.kind === 'problem' ? parsed.problem.why : 'no such file'})`);
      return null;
    }
    v = parsed.value;
  } else {
    try {
      v = YAML.parse(bytes.value.toString('utf8'), { logLevel: 'error' });
    } catch (err) {
      problems.push(`${rel}: cannot be read (${(err as Error).message.split('\n')[0]})`);
      return null;
    }
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    problems.push(`${rel}: is not a mapping of members`);
    return null;
  }
  return v as Record<string, unknown>;
}

function sameBytes(a: string, b: string): boolean {
  try {
    return fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    return false;
  }
}
