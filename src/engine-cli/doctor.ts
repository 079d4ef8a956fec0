/**
 * `engine doctor`: every problem the service answers 410 or 422 for (engine-format.md), warnings
 * that do not break it (dangling take links, missing media), and with `--fix` the safe repairs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isValidId } from '../engine/ids.js';
import { projectDir, readProjectStatusSync } from '../engine/project-file.js';
import { listEntityFiles, parsedOf, readJson } from '../engine/project-index.js';
import {
  checkStoreFileSync,
  readFolderEntryJsonSync,
  readStoreJsonSync,
  storeAccess,
  DEFAULT_STORE_FILE_MAX_BYTES,
  DEFAULT_STORE_JSON_MAX_DEPTH,
  type StoreAccess,
} from '../engine/read-store-file.js';
import { checkMemoryEntry, checkProjectJson, checkShot, checkTake } from './check-files.js';
import { withMembers, type Change, type EntityKind, type Finding } from './findings.js';
import { migrateCommand } from './commands.js';
import { writeFileAtomic, storeJson } from './write-atomic.js';

export interface ProjectReport {
  readonly id: string;
  /** The service's classification: `ok` (served), `invalid` (422 on every route), `legacy` (410). */
  readonly status: 'ok' | 'invalid' | 'legacy';
  /** Files checked in this project (project file, shots, takes). */
  readonly files: number;
  readonly findings: readonly Finding[];
}

export interface DoctorReport {
  /** Absolute store root. */
  readonly store: string;
  /** The project the run was limited to, or null for the whole store. */
  readonly project: string | null;
  readonly projects: readonly ProjectReport[];
  /** Memory entries checked (all, or with `--project` those whose `project_id` is that project). */
  readonly memory: { readonly files: number; readonly findings: readonly Finding[] };
  /** Findings about the store itself (directories the service ignores). */
  readonly store_findings: readonly Finding[];
  readonly errors: number;
  readonly warnings: number;
}

/** The store at `root` read with the service's default bounds (tests and callers without a configuration). */
export function defaultAccess(root: string): StoreAccess {
  return storeAccess(root, { fileMaxBytes: DEFAULT_STORE_FILE_MAX_BYTES, jsonMaxDepth: DEFAULT_STORE_JSON_MAX_DEPTH });
}

/**
 * Checks the store at `root`, or only project `only` (which must exist) and its memory entries,
 * reading every file as the service does (`access`): a pipe, a link out, a file too large or too
 * deep is a finding, never a hang or a throw.
 */
export function diagnose(root: string, only: string | null, access: StoreAccess = defaultAccess(root)): DoctorReport {
  const projects: ProjectReport[] = [];
  const storeFindings: Finding[] = [];
  for (const name of only === null ? listDirectories(path.join(root, 'projects')) : [only]) {
    if (!isValidId(name)) {
      const dir = projectDir(root, name);
      if (fs.existsSync(path.join(dir, 'project.json')) || fs.existsSync(path.join(dir, 'project.yaml'))) {
        storeFindings.push({
          severity: 'warning',
          code: 'ignored_directory',
          project_id: null,
          file: `projects/${name}`,
          entity: null,
          field: null,
          problem: 'is not a valid project id, so the service ignores this project',
          fix: "rename the directory: letters, digits, '.', '_' or '-', starting with a letter or digit",
          derived: null,
        });
      }
      continue;
    }
    const report = diagnoseProject(root, access, name);
    if (report) projects.push(report);
  }
  const memory = diagnoseMemory(access, only);
  const all = [...projects.flatMap((p) => p.findings), ...memory.findings, ...storeFindings];
  return {
    store: root,
    project: only,
    projects,
    memory,
    store_findings: storeFindings,
    errors: all.filter((f) => f.severity === 'error').length,
    warnings: all.filter((f) => f.severity === 'warning').length,
  };
}

/** Whether `id` is a project of the store (a directory with project.json or project.yaml). */
export function isProject(access: StoreAccess, id: string): boolean {
  return readProjectStatusSync(access, id).kind !== 'absent';
}

function diagnoseProject(root: string, access: StoreAccess, id: string): ProjectReport | null {
  const status = readProjectStatusSync(access, id);
  if (status.kind === 'absent') return null;
  const dir = projectDir(root, id);
  if (status.kind === 'legacy') {
    const yaml = status.reason.includes('project.yaml');
    return {
      id,
      status: 'legacy',
      files: 1,
      findings: [
        {
          severity: 'error',
          code: 'legacy_format',
          project_id: id,
          file: `projects/${id}/${yaml ? 'project.yaml' : 'project.json'}`,
          entity: 'project',
          field: yaml ? null : 'format',
          problem: `legacy project format: ${status.reason}`,
          fix: migrateCommand(id),
          derived: null,
        },
      ],
    };
  }
  const findings: Finding[] = [];
  const within = `projects/${id}`;
  if (status.kind === 'invalid') {
    const hasYaml = checkStoreFileSync(access, `${within}/project.yaml`, within).kind !== 'absent';
    findings.push(...checkProjectJson(id, readStoreJsonSync(access, `${within}/project.json`, within), hasYaml));
  }
  const files = (kind: 'shots' | 'takes'): string[] => {
    const listed = listEntityFiles(access, `${within}/${kind}`, within);
    if (listed.kind === 'ok') return listed.value.entries.map((d) => d.name);
    if (listed.kind === 'problem') findings.push(folderFinding(id, `${within}/${kind}`, kind, listed.problem));
    return [];
  };
  const shotFiles = files('shots');
  const takeFiles = files('takes');
  for (const file of shotFiles) findings.push(...checkShot(id, file, readJson(access, `${within}/shots/${file}`, within)));
  const shotIds = new Set(shotFiles.map(stem));
  const takeIds = new Set(takeFiles.map(stem));
  for (const file of takeFiles) {
    const parsed = readJson(access, `${within}/takes/${file}`, within);
    findings.push(...checkTake(id, file, parsed));
    if ('doc' in parsed) findings.push(...takeLinks(dir, id, file, parsed.doc, shotIds, takeIds));
  }
  return { id, status: status.kind, files: 1 + shotFiles.length + takeFiles.length, findings };
}

/** Warnings about one take's links: parent take, shot, media file. */
function takeLinks(dir: string, id: string, file: string, doc: Record<string, unknown>, shotIds: ReadonlySet<string>, takeIds: ReadonlySet<string>): Finding[] {
  const where = `projects/${id}/takes/${file}`;
  const warn = (code: Finding['code'], field: string, problem: string, fix: string): Finding => ({
    severity: 'warning',
    code,
    project_id: id,
    file: where,
    entity: 'take',
    field,
    problem,
    fix,
    derived: null,
  });
  const out: Finding[] = [];
  const parent = doc.parent_take_id;
  if (typeof parent === 'string' && parent.length > 0 && !takeIds.has(parent)) {
    out.push(
      warn(
        'unknown_parent_take',
        'parent_take_id',
        `names no take: ${JSON.stringify(parent)} (there is no takes/${parent}.json)`,
        `set "parent_take_id" in ${where} to an existing take id, or to null for a first take`,
      ),
    );
  }
  if (typeof doc.shot_id === 'string' && doc.shot_id.length > 0 && !shotIds.has(doc.shot_id)) {
    out.push(
      warn(
        'unknown_shot',
        'shot_id',
        `names no shot: ${JSON.stringify(doc.shot_id)} (there is no shots/${doc.shot_id}.json)`,
        `set "shot_id" in ${where} to an existing shot id, or add projects/${id}/shots/${doc.shot_id}.json`,
      ),
    );
  }
  if (typeof doc.media === 'string' && doc.media.length > 0) {
    const target = path.resolve(dir, doc.media);
    if (!target.startsWith(dir + path.sep)) {
      out.push(
        warn('media_outside_project', 'media', `points outside the project's directory: ${JSON.stringify(doc.media)}`, `set "media" in ${where} to a path under media/, relative to projects/${id}/`),
      );
    } else if (!fs.existsSync(target)) {
      out.push(
        warn('missing_media', 'media', `names a file that does not exist: ${JSON.stringify(doc.media)}`, `restore projects/${id}/${doc.media}, or set "media" in ${where} to the take's media file`),
      );
    }
  }
  return out;
}

function diagnoseMemory(access: StoreAccess, only: string | null): DoctorReport['memory'] {
  const findings: Finding[] = [];
  let files = 0;
  const listed = listEntityFiles(access, 'memory', 'memory');
  if (listed.kind === 'problem' && only === null) findings.push(folderFinding(null, 'memory', 'memory', listed.problem));
  for (const entry of listed.kind === 'ok' ? listed.value.entries : []) {
    const name = entry.name;
    const read = listed.kind === 'ok' ? readFolderEntryJsonSync(access, listed.value, entry) : readStoreJsonSync(access, `memory/${name}`, 'memory');
    if (read.kind === 'absent') continue; // removed since the listing
    const parsed = parsedOf(read);
    if (only !== null && (!('doc' in parsed) || parsed.doc.project_id !== only)) continue;
    files += 1;
    findings.push(...checkMemoryEntry(name, parsed));
  }
  return { files, findings };
}

/** A folder of entity files that cannot be listed (not a folder, a link out of the store). */
function folderFinding(projectId: string | null, folder: string, kind: 'shots' | 'takes' | 'memory', problem: { why: string; fix: string }): Finding {
  const field = kind === 'shots' ? 'shot_id' : kind === 'takes' ? 'take_id' : 'id';
  return {
    severity: 'error',
    code: 'missing_canonical_field',
    project_id: projectId,
    file: folder,
    entity: kind === 'shots' ? 'shot' : kind === 'takes' ? 'take' : 'memory',
    field,
    problem: `cannot be read (${problem.why})`,
    fix: `${problem.fix}: ${folder} must be a folder of the store (see engine-format.md)`,
    derived: null,
  };
}

/** Applies the derivable repairs of `report`: each file read again and written atomically, skipped if now unreadable. @returns the changes, in file order. */
export function applyFixes(root: string, report: DoctorReport, access: StoreAccess = defaultAccess(root)): Change[] {
  const byFile = new Map<string, { entity: EntityKind; sets: Map<string, { value: unknown; placeholder: boolean }> }>();
  const all = [...report.projects.flatMap((p) => p.findings), ...report.memory.findings];
  for (const f of all) {
    if (f.derived === null || f.field === null || f.entity === null) continue;
    let entry = byFile.get(f.file);
    if (!entry) byFile.set(f.file, (entry = { entity: f.entity, sets: new Map() }));
    entry.sets.set(f.field, f.derived);
  }
  const changes: Change[] = [];
  for (const [file, { entity, sets }] of byFile) {
    const abs = path.join(root, ...file.split('/'));
    const parts = file.split('/');
    const within = parts[0] === 'projects' ? parts.slice(0, 2).join('/') : (parts[0] as string);
    const parsed = readJson(access, file, within);
    if (!('doc' in parsed)) continue;
    const doc = parsed.doc;
    const values = new Map([...sets].map(([k, v]) => [k, v.value] as const));
    writeFileAtomic(abs, storeJson(withMembers(entity, doc, values)));
    for (const [field, d] of sets) {
      changes.push({ file, field, ...(field in doc ? { from: doc[field] } : {}), to: d.value, placeholder: d.placeholder });
    }
  }
  return changes;
}

function listDirectories(dir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
    .map((d) => d.name)
    .sort();
}

function stem(file: string): string {
  return file.slice(0, -'.json'.length);
}
