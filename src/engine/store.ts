/**
 * The engine store as the main thread sees it (issue: core slice, item 3; engine-format.md).
 *
 * Every answer is cached as a ready-to-send JSON buffer keyed by route and by the project's
 * store generation, which the watcher (and the end of each generation job) bumps. A hit
 * costs a map lookup; a miss runs one synthesis task in the worker pool, shared by every
 * concurrent request for the same key. Error answers (404/410/422) are cached the same way.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { EventBus } from '../bus/bus.js';
import {
  LegacyProjectError,
  MissingCanonicalFieldError,
  NotFoundError,
  missingField,
  type MissingCanonicalFieldDetail,
} from './errors.js';
import { checkId } from './ids.js';
import { readProjectStatus, type ProjectStatus } from './project-file.js';
import { dependsOnTakeState, type SynthesisQuery, type SynthesisError, type TakeStates } from './synthesize.js';
import { StoreWatcher, type StoreChange } from './watcher.js';
import type { SynthesisRunner } from '../workers/pool.js';

/** A response body ready to send: the JSON bytes and a weak ETag for conditional requests. */
export interface CachedBody {
  readonly body: Buffer;
  readonly etag: string;
}

/** Recorded take states, by project (issue: console state). `version` changes on every write. */
export interface TakeStateSource {
  version(projectId: string): number;
  snapshot(projectId: string): TakeStates;
}

/** Recorded memory toggles (issue: console state). */
export interface MemoryToggleSource {
  version(): number;
  toggles(): ReadonlyMap<string, boolean>;
}

export const NO_TAKE_STATES: TakeStateSource = { version: () => 0, snapshot: () => ({}) };
export const NO_MEMORY_TOGGLES: MemoryToggleSource = { version: () => 0, toggles: () => new Map() };

export interface EngineStoreOptions {
  readonly root: string;
  readonly runner: SynthesisRunner;
  readonly bus: EventBus;
  /** Bound on cached body bytes; least recently used entries are evicted past it. */
  readonly cacheMaxBytes: number;
  readonly takeStates?: TakeStateSource;
  readonly memoryToggles?: MemoryToggleSource;
  /** Watch the store for changes (default true). */
  readonly watch?: boolean;
}

interface CacheEntry {
  readonly generation: number;
  readonly stateVersion: number;
  readonly value: CachedBody | Error;
  readonly bytes: number;
}

interface ProjectList {
  readonly change: number;
  readonly statuses: ReadonlyMap<string, ProjectStatus>;
  readonly body: CachedBody;
}

export class EngineStore {
  readonly root: string;
  private readonly runner: SynthesisRunner;
  private readonly bus: EventBus;
  private readonly takeStates: TakeStateSource;
  private readonly memoryToggles: MemoryToggleSource;
  private readonly cacheMaxBytes: number;
  private readonly nonce = randomBytes(4).toString('hex');
  private readonly watcher: StoreWatcher | null;

  /** Monotonic change counter; every invalidation takes the next value. */
  private change = 1;
  private allSince = 1;
  private readonly projectGen = new Map<string, number>();
  private memoryGen = 1;

  private readonly cache = new Map<string, CacheEntry>();
  private cacheBytes = 0;
  private readonly inFlight = new Map<string, Promise<CachedBody>>();
  private list: ProjectList | undefined;
  private listing: Promise<ProjectList> | undefined;
  private memory: { gen: number; toggles: number; value: CachedBody | Error } | undefined;
  /** Legacy or invalid projects already reported by a warning event, with the reason. */
  private readonly warned = new Map<string, string>();
  private hits = 0;
  private misses = 0;

  constructor(opts: EngineStoreOptions) {
    this.root = opts.root;
    this.runner = opts.runner;
    this.bus = opts.bus;
    this.cacheMaxBytes = opts.cacheMaxBytes;
    this.takeStates = opts.takeStates ?? NO_TAKE_STATES;
    this.memoryToggles = opts.memoryToggles ?? NO_MEMORY_TOGGLES;
    this.watcher = opts.watch === false ? null : new StoreWatcher(this.root, (c) => this.onStoreChange(c));
  }

  /** Starts the watcher and reads the project list once, so legacy projects are reported at start-up. */
  async start(): Promise<void> {
    this.watcher?.start();
    await this.projectList();
  }

  close(): void {
    this.watcher?.close();
  }

  /** Marks a project's cached answers stale (e.g. after a generation job wrote a take). */
  invalidateProject(projectId: string): void {
    this.projectGen.set(projectId, ++this.change);
  }

  /** Marks everything stale. */
  invalidateAll(): void {
    this.allSince = ++this.change;
    this.memoryGen = this.change;
  }

  private onStoreChange(c: StoreChange): void {
    if (c.kind === 'project') this.invalidateProject(c.projectId);
    else if (c.kind === 'memory') this.memoryGen = ++this.change;
    else if (c.kind === 'all') this.invalidateAll(); // `projects/` replaced: every project changed
    else ++this.change; // the project list is rebuilt when `change` moved
  }

  private generation(projectId: string): number {
    return Math.max(this.projectGen.get(projectId) ?? 0, this.allSince);
  }

  /** `GET /api/projects`: format-2 projects, by id; legacy and invalid ones are left out. */
  async listProjects(): Promise<CachedBody> {
    return (await this.projectList()).body;
  }

  /**
   * `GET /api/projects/{id}`.
   * @throws InvalidIdError, NotFoundError (unknown), LegacyProjectError, MissingCanonicalFieldError.
   */
  async getProject(projectId: string): Promise<CachedBody> {
    checkId('project_id', projectId);
    const list = await this.projectList();
    const status = list.statuses.get(projectId) ?? (await readProjectStatus(this.root, projectId));
    switch (status.kind) {
      case 'ok':
        return this.bodyOf(status.project, `p-${this.generation(projectId)}-${list.change}`);
      case 'legacy':
        throw new LegacyProjectError(projectId, status.reason);
      case 'invalid':
        throw new MissingCanonicalFieldError(status.detail);
      case 'absent':
        throw new NotFoundError(`unknown project ${projectId}`);
    }
  }

  /**
   * Whether `projectId` names a project in the store, as `GET /api/projects/{id}` decides: a
   * directory under `projects/` holding `project.json` or `project.yaml` (engine-format.md). A
   * legacy project, or one missing a canonical field, is a project (410 and 422 there, not 404):
   * the console records clicks on what it shows. Answered from the cached project list.
   * @throws InvalidIdError for a malformed id.
   */
  async hasProject(projectId: string): Promise<boolean> {
    checkId('project_id', projectId);
    const list = await this.projectList();
    const status = list.statuses.get(projectId) ?? (await readProjectStatus(this.root, projectId));
    return status.kind !== 'absent';
  }

  /**
   * Answers an entity query through the cache and the worker pool.
   * @throws NotFoundError, LegacyProjectError, MissingCanonicalFieldError (ids must be checked by the caller).
   */
  async query(projectId: string, q: SynthesisQuery): Promise<CachedBody> {
    const key = `${projectId}\0${queryKey(q)}`;
    const generation = this.generation(projectId);
    const stateful = dependsOnTakeState(q);
    const stateVersion = stateful ? this.takeStates.version(projectId) : 0;
    const hit = this.cache.get(key);
    if (hit && hit.generation === generation && hit.stateVersion === stateVersion) {
      this.hits++;
      // Refresh recency: Map iteration order is insertion order.
      this.cache.delete(key);
      this.cache.set(key, hit);
      if (hit.value instanceof Error) throw hit.value;
      return hit.value;
    }
    const flightKey = `${key}\0${generation}\0${stateVersion}`;
    let flight = this.inFlight.get(flightKey);
    if (!flight) {
      this.misses++;
      flight = this.synthesize(projectId, q, key, generation, stateVersion, stateful);
      this.inFlight.set(flightKey, flight);
      const done = () => this.inFlight.delete(flightKey);
      flight.then(done, done);
    }
    return flight;
  }

  private async synthesize(
    projectId: string,
    q: SynthesisQuery,
    key: string,
    generation: number,
    stateVersion: number,
    stateful: boolean,
  ): Promise<CachedBody> {
    const result = await this.runner.run({
      root: this.root,
      projectId,
      generation,
      query: q,
      takeStates: stateful ? this.takeStates.snapshot(projectId) : {},
    });
    const value: CachedBody | Error = result.ok
      ? { body: Buffer.from(result.body), etag: `W/"${this.nonce}-${generation}-${stateVersion}"` }
      : toError(result.error, projectId);
    this.remember(key, { generation, stateVersion, value, bytes: value instanceof Error ? 256 : value.body.length + key.length });
    if (value instanceof Error) throw value;
    return value;
  }

  private remember(key: string, entry: CacheEntry): void {
    const old = this.cache.get(key);
    if (old) {
      this.cacheBytes -= old.bytes;
      this.cache.delete(key);
    }
    // Keep the newest answer only: a slower task for an older generation must not win.
    if (old && old.generation > entry.generation) {
      this.cache.set(key, old);
      this.cacheBytes += old.bytes;
      return;
    }
    this.cache.set(key, entry);
    this.cacheBytes += entry.bytes;
    for (const [k, e] of this.cache) {
      if (this.cacheBytes <= this.cacheMaxBytes) break;
      this.cache.delete(k);
      this.cacheBytes -= e.bytes;
    }
  }

  /** `GET /api/memory`: entries from `memory/`, `enabled` replaced by the last recorded toggle. */
  async listMemory(): Promise<CachedBody> {
    const toggles = this.memoryToggles.version();
    const m = this.memory;
    if (m && m.gen === this.memoryGen && m.toggles === toggles) {
      if (m.value instanceof Error) throw m.value;
      return m.value;
    }
    const gen = this.memoryGen;
    let value: CachedBody | Error;
    try {
      const entries = await readMemory(this.root, this.memoryToggles.toggles());
      value = this.bodyOf(entries, `m-${gen}-${toggles}`);
    } catch (err) {
      if (!(err instanceof MissingCanonicalFieldError)) throw err;
      value = err;
    }
    this.memory = { gen, toggles, value };
    if (value instanceof Error) throw value;
    return value;
  }

  /** Whether a memory entry file exists (for toggles). @throws InvalidIdError */
  memoryEntryExists(entryId: string): boolean {
    checkId('entry_id', entryId);
    return fs.existsSync(path.join(this.root, 'memory', `${entryId}.json`));
  }

  /** Cache figures for the system status. */
  stats(): Record<string, number> {
    return {
      entries: this.cache.size,
      bytes: this.cacheBytes,
      maxBytes: this.cacheMaxBytes,
      hits: this.hits,
      misses: this.misses,
      watchedDirectories: this.watcher?.stats.directories ?? 0,
      watchFailures: this.watcher?.stats.failures ?? 0,
      watchesReplaced: this.watcher?.stats.replaced ?? 0,
    };
  }

  private async projectList(): Promise<ProjectList> {
    if (this.list && this.list.change === this.change) return this.list;
    if (!this.listing) {
      const change = this.change;
      this.listing = this.readProjectList(change).finally(() => (this.listing = undefined));
    }
    const list = await this.listing;
    return list;
  }

  private async readProjectList(change: number): Promise<ProjectList> {
    const dir = path.join(this.root, 'projects');
    const names = await fsp.readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    const ids = names
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name)
      .sort();
    const statuses = new Map<string, ProjectStatus>();
    for (const id of ids) {
      let status: ProjectStatus;
      try {
        checkId('project_id', id);
        status = await readProjectStatus(this.root, id);
      } catch {
        continue; // a directory whose name is not an id cannot be addressed: ignore it
      }
      if (status.kind !== 'absent') statuses.set(id, status);
    }
    this.reportSkipped(statuses);
    const projects = [...statuses.values()].flatMap((s) => (s.kind === 'ok' ? [s.project] : []));
    const list = { change, statuses, body: this.bodyOf(projects, `l-${change}`) };
    if (!this.list || this.list.change <= change) this.list = list;
    return list;
  }

  /** One warning event per legacy or invalid project, again only when its reason changes. */
  private reportSkipped(statuses: ReadonlyMap<string, ProjectStatus>): void {
    for (const id of this.warned.keys()) {
      const s = statuses.get(id);
      if (!s || s.kind === 'ok') this.warned.delete(id);
    }
    for (const s of statuses.values()) {
      if (s.kind === 'legacy') {
        if (this.warned.get(s.id) === s.reason) continue;
        this.warned.set(s.id, s.reason);
        this.bus.publish({
          severity: 'warning',
          scope: 'engine/projects',
          summary: `legacy project skipped: ${s.id} (${s.reason})`,
          detail: `legacy project format: ${s.reason}`,
          payload: { project_id: s.id, reason: s.reason },
        });
      } else if (s.kind === 'invalid') {
        const reason = `missing canonical field ${s.detail.field}`;
        if (this.warned.get(s.id) === reason) continue;
        this.warned.set(s.id, reason);
        this.bus.publish({
          severity: 'warning',
          scope: 'engine/projects',
          summary: `project skipped: ${s.id} (${reason})`,
          detail: s.detail.remediation,
          payload: { project_id: s.id, field: s.detail.field, fix_cli: s.detail.fix_cli },
        });
      }
    }
  }

  private bodyOf(value: unknown, tag: string): CachedBody {
    return { body: Buffer.from(JSON.stringify(value)), etag: `W/"${this.nonce}-${tag}"` };
  }
}

function queryKey(q: SynthesisQuery): string {
  switch (q.kind) {
    case 'episodes':
      return 'episodes';
    case 'scenes':
      return `scenes\0${q.episodeId}`;
    case 'beats':
      return `beats\0${q.episodeId}\0${q.sceneId}`;
    case 'takes':
      return `takes\0${q.beatId}`;
    case 'lineage':
      return `lineage\0${q.beatId}\0${q.takeId ?? ''}`;
  }
}

function toError(e: SynthesisError, projectId: string): Error {
  switch (e.kind) {
    case 'not_found':
      return new NotFoundError(e.message);
    case 'legacy':
      return new LegacyProjectError(projectId, e.reason);
    case 'missing_field':
      return new MissingCanonicalFieldError(e.detail);
  }
}

/**
 * Validates one memory file (engine-format.md, memory/): canonical `id` (equal to the file name
 * without `.json`), then `text`. `name` is the file name, `text` its contents. Returns the entry,
 * or the first problem as a MissingCanonicalField detail whose `project_id` is the entry's own
 * `project_id` when it has one. Exported so the engine CLI's doctor applies the same rules.
 */
export function parseMemoryEntry(
  name: string,
  text: string,
): { readonly doc: Record<string, unknown> & { readonly id: string; readonly text: string } } | { readonly error: MissingCanonicalFieldDetail } {
  const where = `memory/${name}`;
  const expected = name.slice(0, -'.json'.length);
  let doc: Record<string, unknown>;
  try {
    const v = JSON.parse(text) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    doc = v as Record<string, unknown>;
  } catch (err) {
    return { error: missingField(null, 'id', where, `cannot be read (${(err as Error).message})`) };
  }
  const projectId = typeof doc.project_id === 'string' ? doc.project_id : null;
  if (typeof doc.id !== 'string' || doc.id !== expected) {
    return {
      error: missingField(projectId, 'id', where, doc.id === undefined ? 'is missing' : `does not match the file name "${expected}"`),
    };
  }
  if (typeof doc.text !== 'string') return { error: missingField(projectId, 'text', where) };
  return { doc: doc as Record<string, unknown> & { id: string; text: string } };
}

async function readMemory(root: string, toggles: ReadonlyMap<string, boolean>): Promise<unknown[]> {
  const dir = path.join(root, 'memory');
  const names = await fsp.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  const out: unknown[] = [];
  for (const name of names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort()) {
    let text: string;
    try {
      text = await fsp.readFile(path.join(dir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new MissingCanonicalFieldError(missingField(null, 'id', `memory/${name}`, `cannot be read (${(err as Error).message})`));
    }
    const parsed = parseMemoryEntry(name, text);
    if ('error' in parsed) throw new MissingCanonicalFieldError(parsed.error);
    const doc = parsed.doc;
    const enabled = toggles.get(doc.id) ?? (typeof doc.enabled === 'boolean' ? doc.enabled : true);
    out.push({ ...doc, enabled });
  }
  return out;
}
