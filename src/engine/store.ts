/**
 * The engine store as the main thread sees it (issue: core slice, item 3; engine-format.md).
 *
 * Every answer is cached as a ready-to-send JSON buffer keyed by route and by the project's
 * store generation, which the watcher (and the end of each generation job) bumps. A hit
 * costs a map lookup; a miss runs one synthesis task in the worker pool, shared by every
 * concurrent request for the same key. Error answers (404/410/422) are cached the same way.
 *
 * No store file is read or parsed here (issue 10, items 2-4): the project list, a project,
 * the memory entries and the file checks of take actions and memory toggles are worker tasks
 * too (src/engine/store-reads.ts), with a deadline, and come back as ready JSON bytes. A
 * project whose files cannot be used (a pipe, a link out of the store, too large, too deep,
 * not JSON) is a 422 for that project alone; the list leaves it out with a warning event.
 */
import { randomBytes } from 'node:crypto';
import type { EventBus } from '../bus/bus.js';
import {
  LegacyProjectError,
  MissingCanonicalFieldError,
  NotFoundError,
  unknownProject,
  StoreReadTimeoutError,
  missingFieldReason,
  type MissingCanonicalFieldDetail,
} from './errors.js';
import { checkId } from './ids.js';
import type { StoreAccess } from './read-store-file.js';
import { MemorySkipReporter } from './memory-skips.js';
import type { MemoryEntryCheck, ProjectEntry, TakeFileRead } from './store-reads.js';
import { dependsOnTakeState, type SynthesisQuery, type SynthesisError, type TakeStates } from './synthesize.js';
import { StoreWatcher, type StoreChange } from './watcher.js';
import type { SynthesisRunner } from './runner.js';

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
  /** The store root as configured (CONSOLE_DATA_DIR). */
  readonly root: string;
  /** The store's real root and the bounds of its files (src/engine/read-store-file.ts). */
  readonly access: StoreAccess;
  readonly runner: SynthesisRunner;
  readonly bus: EventBus;
  /** Bound on cached body bytes; least recently used entries are evicted past it. */
  readonly cacheMaxBytes: number;
  readonly takeStates?: TakeStateSource;
  readonly memoryToggles?: MemoryToggleSource;
  /** Watch the store for changes (default true). */
  readonly watch?: boolean;
  /** Where the store reports what it skipped or could not read (the service's log). */
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
}

interface CacheEntry {
  readonly generation: number;
  readonly stateVersion: number;
  readonly value: CachedBody | Error;
  readonly bytes: number;
}

interface ProjectList {
  readonly change: number;
  readonly statuses: ReadonlyMap<string, ProjectEntry>;
  readonly body: CachedBody;
}

export class EngineStore {
  readonly root: string;
  /** The store's real root and the bounds of its files: every read of the store goes through it. */
  readonly access: StoreAccess;
  private readonly runner: SynthesisRunner;
  private readonly bus: EventBus;
  private readonly takeStates: TakeStateSource;
  private readonly memoryToggles: MemoryToggleSource;
  private readonly cacheMaxBytes: number;
  private readonly nonce = randomBytes(4).toString('hex');
  private readonly watcher: StoreWatcher | null;
  private readonly log: (fields: Record<string, unknown>, message: string) => void;

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
  /** Why `projects/` could not be listed, as last reported (null when it could). */
  private listProblem: string | null = null;
  /** Legacy or invalid projects already reported by a warning event, with the reason. */
  private readonly warned = new Map<string, string>();
  /** Reports the memory entry files left out of the list (issue 14, item 6). */
  private readonly memorySkips: MemorySkipReporter;
  private hits = 0;
  private misses = 0;

  constructor(opts: EngineStoreOptions) {
    this.root = opts.root;
    this.access = opts.access;
    this.log = opts.log ?? (() => {});
    this.runner = opts.runner;
    this.bus = opts.bus;
    this.cacheMaxBytes = opts.cacheMaxBytes;
    this.takeStates = opts.takeStates ?? NO_TAKE_STATES;
    this.memoryToggles = opts.memoryToggles ?? NO_MEMORY_TOGGLES;
    this.watcher = opts.watch === false ? null : new StoreWatcher(this.root, (c) => this.onStoreChange(c));
    this.memorySkips = new MemorySkipReporter(this.bus, this.log);
  }

  /**
   * Starts the watcher and reads the project list once, so legacy and unreadable projects are
   * reported at start-up. A list that cannot be read in time (CONSOLE_STORE_READ_TIMEOUT_MS)
   * does not stop the start-up: it is reported, and read again at the next request.
   */
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
    const { list, status } = await this.statusOf(projectId);
    switch (status.kind) {
      case 'ok':
        return { body: bufferOf(status.body), etag: `W/"${this.nonce}-p-${this.generation(projectId)}-${list.change}"` };
      case 'legacy':
        throw new LegacyProjectError(projectId, status.reason);
      case 'invalid':
        throw new MissingCanonicalFieldError(status.detail);
      case 'absent':
        throw unknownProject(projectId);
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
    return (await this.statusOf(projectId)).status.kind !== 'absent';
  }

  /** A project's status: from the cached list, else read (in the worker pool). @throws InvalidIdError */
  private async statusOf(projectId: string) {
    checkId('project_id', projectId);
    const list = await this.projectList();
    const status = list.statuses.get(projectId) ?? (await this.runner.read({ op: 'project', access: this.access, projectId }));
    return { list, status };
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
      access: this.access,
      projectId,
      generation,
      query: q,
      takeStates: stateful ? this.takeStates.snapshot(projectId) : {},
    });
    const value: CachedBody | Error = result.ok
      ? { body: bufferOf(result.body), etag: `W/"${this.nonce}-${generation}-${stateVersion}"` }
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

  /**
   * `GET /api/memory`: entries from `memory/`, `enabled` replaced by the last recorded toggle;
   * entry files that cannot be used are left out, each reported once by a warning event.
   * @throws MissingCanonicalFieldError when `memory/` itself cannot be listed.
   */
  async listMemory(): Promise<CachedBody> {
    const toggles = this.memoryToggles.version();
    const m = this.memory;
    if (m && m.gen === this.memoryGen && m.toggles === toggles) {
      if (m.value instanceof Error) throw m.value;
      return m.value;
    }
    const gen = this.memoryGen;
    const listing = await this.runner.read({ op: 'memory', access: this.access, toggles: Object.fromEntries(this.memoryToggles.toggles()) });
    const value: CachedBody | Error = listing.ok
      ? { body: bufferOf(listing.body), etag: `W/"${this.nonce}-m-${gen}-${toggles}"` }
      : new MissingCanonicalFieldError(listing.detail);
    if (listing.ok) this.memorySkips.report(listing.skipped);
    this.memory = { gen, toggles, value };
    if (value instanceof Error) throw value;
    return value;
  }

  /**
   * Whether a memory entry file is there, for toggles (engine-format.md: memory/).
   * @throws InvalidIdError; MissingCanonicalFieldError when it cannot be used (not a regular
   *   file, a link out of `memory/`, too large); StoreReadTimeoutError.
   */
  async memoryEntryExists(entryId: string): Promise<boolean> {
    checkId('entry_id', entryId);
    const r: MemoryEntryCheck = await this.runner.read({ op: 'memory-entry', access: this.access, entryId });
    if (r.kind === 'unusable') throw new MissingCanonicalFieldError(r.detail);
    return r.kind === 'present';
  }

  /**
   * The take file of a take action ("the take id is on disk", engine-format.md: takes/).
   * Ids must be valid (checked by the caller).
   * @throws MissingCanonicalFieldError when the file cannot be used (not a regular file, a link
   *   out of its project, too large); StoreReadTimeoutError.
   */
  async readTakeFile(projectId: string, takeId: string): Promise<Exclude<TakeFileRead, { onDisk: 'unusable' }>> {
    const r = await this.runner.read({ op: 'take-file', access: this.access, projectId, takeId });
    if (r.onDisk === 'unusable') throw new MissingCanonicalFieldError(r.detail);
    return r;
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
    const listing = await this.runner.read({ op: 'projects', access: this.access });
    this.reportListProblem(listing.problem === null ? null : listing.problem.why);
    // Each project's bytes are a slice of the list's: nothing is parsed, serialised or copied here.
    const body = bufferOf(listing.body);
    const statuses = new Map<string, ProjectEntry>(
      listing.entries.map((e) => [e.id, e.kind === 'ok' ? { kind: 'ok', id: e.id, body: body.subarray(e.start, e.end) } : e] as const),
    );
    this.reportSkipped(statuses);
    const list = { change, statuses, body: { body, etag: `W/"${this.nonce}-l-${change}"` } };
    if (!this.list || this.list.change <= change) this.list = list;
    return list;
  }

  /** One warning event when `projects/` cannot be listed (a file, a link out, a loop), again when the reason changes. */
  private reportListProblem(why: string | null): void {
    if (why === this.listProblem) return;
    this.listProblem = why;
    if (why === null) return;
    this.log({ folder: 'projects' }, `engine store: projects/ cannot be listed (${why})`);
    this.bus.publish({
      severity: 'warning',
      scope: 'engine/projects',
      summary: `projects/ cannot be listed (${why})`,
      detail: 'the store has no project until projects/ is a folder of the store',
      payload: { folder: 'projects', reason: why },
    });
  }

  /** One warning event per legacy or invalid project, again only when its reason changes. */
  private reportSkipped(statuses: ReadonlyMap<string, ProjectEntry>): void {
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
        const why = missingFieldReason(s.detail);
        const reason = why === 'is missing' ? `missing canonical field ${s.detail.field}` : `canonical field ${s.detail.field} ${why}`;
        if (this.warned.get(s.id) === reason) continue;
        this.warned.set(s.id, reason);
        this.log({ projectId: s.id, remediation: s.detail.remediation }, `engine store: project skipped: ${s.id} (${reason})`);
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

}

/** A body moved from a worker as a Buffer over the same memory (no copy). */
function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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
