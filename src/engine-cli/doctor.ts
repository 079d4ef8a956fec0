/**
 * `engine doctor`: reports every problem of the engine store that the service answers 410 or
 * 422 for (engine-format.md: legacy format, canonical fields of project.json, shots, takes and
 * memory entries), plus warnings that do not break the service (dangling take links, missing
 * media), and with `--fix` repairs what can be derived safely.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isValidId } from '../engine/ids.js';
import { projectDir, readProjectStatusSync } from '../engine/project-file.js';
import { listEntityFiles, readJson } from '../engine/project-index.js';
import { checkMemoryEntry, checkProjectJson, checkShot, checkTake, objectOf } from './check-files.js';
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

/**
 * Checks the store at `root`, or only project `only` (which must exist) and its memory entries.
 * Reads only; never throws for store content (unreadable files are findings).
 */
export function diagnose(root: string, only: string | null): DoctorReport {
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
    const report = diagnoseProject(root, name);
    if (report) projects.push(report);
  }
  const memory = diagnoseMemory(root, only);
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
export function isProject(root: string, id: string): boolean {
  return readProjectStatusSync(root, id).kind !== 'absent';
}

function diagnoseProject(root: string, id: string): ProjectReport | null {
  const status = readProjectStatusSync(root, id);
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
  if (status.kind === 'invalid') {
    const text = fs.readFileSync(path.join(dir, 'project.json'), 'utf8');
    findings.push(...checkProjectJson(id, text, fs.existsSync(path.join(dir, 'project.yaml'))));
  }
  const shotFiles = listEntityFiles(path.join(dir, 'shots'));
  const takeFiles = listEntityFiles(path.join(dir, 'takes'));
  for (const file of shotFiles) findings.push(...checkShot(id, file, readJson(path.join(dir, 'shots', file))));
  const shotIds = new Set(shotFiles.map(stem));
  const takeIds = new Set(takeFiles.map(stem));
  for (const file of takeFiles) {
    const parsed = readJson(path.join(dir, 'takes', file));
    findings.push(...checkTake(id, file, parsed));
    if ('doc' in parsed) findings.push(...takeLinks(dir, id, file, parsed.doc, shotIds, takeIds));
  }
  return { id, status: status.kind, files: 1 + shotFiles.length + takeFiles.length, findings };
}

/** Warnings about one take's links: parent take, shot, media file. */
function takeLinks(
  dir: string,
  id: string,
  file: string,
  doc: Record<string, unknown>,
  shotIds: ReadonlySet<string>,
  takeIds: ReadonlySet<string>,
): Finding[] {
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
        warn(
          'media_outside_project',
          'media',
          `points outside the project's directory: ${JSON.stringify(doc.media)}`,
          `set "media" in ${where} to a path under media/, relative to projects/${id}/`,
        ),
      );
    } else if (!fs.existsSync(target)) {
      out.push(
        warn(
          'missing_media',
          'media',
          `names a file that does not exist: ${JSON.stringify(doc.media)}`,
          `restore projects/${id}/${doc.media}, or set "media" in ${where} to the take's media file`,
        ),
      );
    }
  }
  return out;
}

function diagnoseMemory(root: string, only: string | null): DoctorReport['memory'] {
  const dir = path.join(root, 'memory');
  const findings: Finding[] = [];
  let files = 0;
  for (const name of listEntityFiles(dir)) {
    let text: string | Error;
    try {
      text = fs.readFileSync(path.join(dir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed since the listing
      text = err as Error;
    }
    if (only !== null && (typeof text !== 'string' || objectOf(text)?.project_id !== only)) continue;
    files += 1;
    findings.push(...checkMemoryEntry(name, text));
  }
  return { files, findings };
}

/**
 * Applies every derivable repair of `report` (findings with `derived`): each file is read again,
 * its members set, and written atomically; no other file is touched. A file that changed into
 * something unreadable since the report is skipped.
 * @returns the changes made, in file order.
 */
export function applyFixes(root: string, report: DoctorReport): Change[] {
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
    let doc: Record<string, unknown> | null;
    try {
      doc = objectOf(fs.readFileSync(abs, 'utf8'));
    } catch {
      doc = null;
    }
    if (doc === null) continue;
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
