/**
 * The engine store as the main thread sees it (engine-format.md): answers cached as ready JSON by
 * route and store generation, a miss one shared task in the worker pool; no file read here.
 */
import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus/bus.js';
import type { SynthesisRunner } from './runner.js';
import { AnswerCache, type CachedBody } from './answer-cache.js';
import { LegacyProjectError, MissingCanonicalFieldError, NotFoundError, unknownProject, StoreReadTimeoutError } from './errors.js';
import { checkId } from './ids.js';
import { MemorySkipReporter } from './memory-skips.js';
import { MemoryEntries, NO_MEMORY_TOGGLES, type MemoryToggleSource } from './memory-entries.js';
import { bufferOf, ProjectList, type ListedProjects } from './project-list.js';
import type { StoreAccess } from './read-store-file.js';
import { SingleFlight } from './single-flight.js';
import { StoreGenerations } from './store-generations.js';
import type { TakeFileRead } from './store-reads.js';
import { dependsOnTakeState, type SynthesisQuery, type SynthesisError, type TakeStates } from './synthesize.js';
import type { IndexLoad } from './synthesis-task.js';
import { StoreWatcher, type StoreChange } from './watcher.js';

export type { CachedBody } from './answer-cache.js';
export { NO_MEMORY_TOGGLES, type MemoryToggleSource } from './memory-entries.js';

/** Recorded take states, by project; `version` changes on every write. */
export interface TakeStateSource {
  version(projectId: string): number;
  snapshot(projectId: string): TakeStates;
}

export const NO_TAKE_STATES: TakeStateSource = { version: () => 0, snapshot: () => ({}) };

export interface EngineStoreOptions {
  /** The store root as configured (CONSOLE_DATA_DIR). */
  readonly root: string;
  /** The store's real root and the bounds of its files (src/engine/read-store-file.ts). */
  readonly access: StoreAccess;
  readonly runner: SynthesisRunner;
  readonly bus: Bus;
  /** Bound on cached body bytes; least recently used entries are evicted past it. */
  readonly cacheMaxBytes: number;
  readonly takeStates?: TakeStateSource;
  readonly memoryToggles?: MemoryToggleSource;
  /** Watch the store for changes (default true). */
  readonly watch?: boolean;
  /** Where the store reports what it skipped or could not read (the service's log). */
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
}

export class EngineStore {
  readonly root: string;
  /** The store's real root and the bounds of its files: every read of the store goes through it. */
  readonly access: StoreAccess;
  private readonly runner: SynthesisRunner;
  private readonly bus: Bus;
  private readonly takeStates: TakeStateSource;
  private readonly nonce = randomBytes(4).toString('hex');
  private readonly watcher: StoreWatcher | null;
  private readonly log: (fields: Record<string, unknown>, message: string) => void;
  private readonly generations = new StoreGenerations();
  private readonly answers: AnswerCache;
  private readonly flights = new SingleFlight<CachedBody>();
  private readonly projects: ProjectList;
  private readonly memory: MemoryEntries;
  /** How synthesis tasks got their project's index, and the store files they read. */
  private readonly loads = { cached: 0, patched: 0, full: 0 };
  private filesRead = 0;

  constructor(opts: EngineStoreOptions) {
    this.root = opts.root;
    this.access = opts.access;
    this.log = opts.log ?? (() => {});
    this.runner = opts.runner;
    this.bus = opts.bus;
    this.answers = new AnswerCache(opts.cacheMaxBytes);
    this.takeStates = opts.takeStates ?? NO_TAKE_STATES;
    this.projects = new ProjectList({ access: this.access, runner: this.runner, bus: this.bus, nonce: this.nonce, log: this.log });
    this.memory = new MemoryEntries(this.access, this.runner, opts.memoryToggles ?? NO_MEMORY_TOGGLES, this.nonce, new MemorySkipReporter(this.bus, this.log));
    this.watcher = opts.watch === false ? null : new StoreWatcher(this.root, (c) => this.generations.apply(c));
  }

  /** Starts the watcher and reads the project list once to report legacy and unreadable projects; a timeout is reported, not fatal. */
  async start(): Promise<void> {
    this.watcher?.start();
    try {
      await this.projectList();
    } catch (err) {
      if (!(err instanceof StoreReadTimeoutError)) throw err;
      this.log({ timeoutMs: err.timeoutMs }, 'engine store: the project list was not read at start-up in time');
      this.bus.publish({
        severity: 'warning',
        scope: 'engine/projects',
        summary: 'project list not read at start-up',
        detail: err.message,
        payload: { timeout_ms: err.timeoutMs },
      });
    }
  }

  close(): void {
    this.watcher?.close();
  }

  /** A change seen other than by the watcher (cluster revalidation, revalidator.ts), applied as the watcher's. */
  changed(c: StoreChange): void {
    this.generations.apply(c);
  }

  /** Marks a project's cached answers stale as a whole: the next answer reads it whole. */
  invalidateProject(projectId: string): void {
    this.generations.invalidateProject(projectId);
  }

  /** A generation job of the project ended: a watched project already saw its take file, else it is marked stale whole. */
  jobEnded(projectId: string): void {
    if (this.watcher?.covers(projectId) !== true) this.invalidateProject(projectId);
  }

  /** Marks everything stale. */
  invalidateAll(): void {
    this.generations.invalidateAll();
  }

  /** `GET /api/projects`: format-2 projects, by id; legacy and invalid ones are left out. */
  async listProjects(): Promise<CachedBody> {
    return (await this.projectList()).body;
  }

  /** `GET /api/projects/{id}`. @throws InvalidIdError, NotFoundError, LegacyProjectError, MissingCanonicalFieldError. */
  async getProject(projectId: string): Promise<CachedBody> {
    const { list, status } = await this.statusOf(projectId);
    switch (status.kind) {
      case 'ok':
        return { body: bufferOf(status.body), etag: `W/"${this.nonce}-p-${this.generations.project(projectId)}-${list.change}"` };
      case 'legacy':
        throw new LegacyProjectError(projectId, status.reason);
      case 'invalid':
        throw new MissingCanonicalFieldError(status.detail);
      case 'absent':
        throw unknownProject(projectId);
    }
  }

  /**
   * Whether `projectId` names a project as `GET /api/projects/{id}` decides (legacy and invalid
   * ones count: 410/422, not 404), from the cached list. @throws InvalidIdError.
   */
  async hasProject(projectId: string): Promise<boolean> {
    return (await this.statusOf(projectId)).status.kind !== 'absent';
  }

  /** A project's status: from the cached list, else read (in the worker pool). @throws InvalidIdError */
  private async statusOf(projectId: string) {
    checkId('project_id', projectId);
    const list = await this.projectList();
    const status = list.statuses.get(projectId) ?? (await this.runner.read({ op: 'project', access: this.access, projectId }));
    return { list, status };
  }

  private projectList(): Promise<ListedProjects> {
    return this.projects.at(this.generations.list);
  }

  /**
   * An entity query (ids checked by the caller): the body at once on a cache hit (the hot path),
   * else a promise of one shared task. @throws NotFoundError, LegacyProjectError, MissingCanonicalFieldError.
   */
  query(projectId: string, q: SynthesisQuery): CachedBody | Promise<CachedBody> {
    const key = `${projectId}\0${queryKey(q)}`;
    const generation = this.generations.project(projectId);
    const stateful = dependsOnTakeState(q);
    const stateVersion = stateful ? this.takeStates.version(projectId) : 0;
    const hit = this.answers.lookup(key, generation, stateVersion);
    if (hit) {
      if (hit.value instanceof Error) throw hit.value;
      return hit.value;
    }
    return this.flights.run(`${key}\0${generation}\0${stateVersion}`, () => this.synthesize(projectId, q, key, generation, stateVersion, stateful));
  }

  private async synthesize(projectId: string, q: SynthesisQuery, key: string, generation: number, stateVersion: number, stateful: boolean): Promise<CachedBody> {
    const result = await this.runner.run({
      access: this.access,
      projectId,
      generation,
      changes: this.generations.changesOf(projectId),
      query: q,
      takeStates: stateful ? this.takeStates.snapshot(projectId) : {},
    });
    this.countLoad(projectId, result.load);
    const value: CachedBody | Error = result.ok ? { body: bufferOf(result.body), etag: `W/"${this.nonce}-${generation}-${stateVersion}"` } : toError(result.error, projectId);
    this.answers.remember(key, { generation, stateVersion, value });
    if (value instanceof Error) throw value;
    return value;
  }

  /** Counts how a worker got the project's index, and what it now holds (the change log is trimmed by it). */
  private countLoad(projectId: string, load: IndexLoad): void {
    this.loads[load.kind]++;
    this.filesRead += load.filesRead;
    const live = this.runner.threadIds?.() ?? null;
    this.generations.changeLog.noteHeld(projectId, load.thread, load.held, load.evicted, live === null ? null : new Set(live));
  }

  /** `GET /api/memory`: entries from `memory/`, `enabled` replaced by the last recorded toggle. */
  listMemory(): Promise<CachedBody> {
    return this.memory.list(this.generations.memory);
  }

  /** Whether a memory entry file is there, for toggles. @throws InvalidIdError; MissingCanonicalFieldError when unusable; StoreReadTimeoutError. */
  memoryEntryExists(entryId: string): Promise<boolean> {
    return this.memory.exists(entryId);
  }

  /** The take file of a take action (valid ids, checked by the caller). @throws MissingCanonicalFieldError when unusable; StoreReadTimeoutError. */
  async readTakeFile(projectId: string, takeId: string): Promise<Exclude<TakeFileRead, { onDisk: 'unusable' }>> {
    const r = await this.runner.read({ op: 'take-file', access: this.access, projectId, takeId });
    if (r.onDisk === 'unusable') throw new MissingCanonicalFieldError(r.detail);
    return r;
  }

  /** Cache figures for the system status. */
  stats(): Record<string, number> {
    return {
      ...this.answers.stats(),
      misses: this.flights.startedCount,
      filesRead: this.filesRead,
      projectReads: this.loads.full,
      projectPatches: this.loads.patched,
      changeLogFiles: this.generations.changeLog.size,
      watchedDirectories: this.watcher?.stats.directories ?? 0,
      watchFailures: this.watcher?.stats.failures ?? 0,
      watchesReplaced: this.watcher?.stats.replaced ?? 0,
    };
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
      return new NotFoundError(e.what, e.message);
    case 'legacy':
      return new LegacyProjectError(projectId, e.reason);
    case 'missing_field':
      return new MissingCanonicalFieldError(e.detail);
  }
}
