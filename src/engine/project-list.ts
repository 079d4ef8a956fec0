/**
 * The project list as the main thread keeps it (service-spec.md §Read routes): read in the
 * worker pool when the store changed, shared by concurrent requests.
 */
import type { Bus } from '../bus/bus.js';
import type { SynthesisRunner } from './runner.js';
import type { CachedBody } from './answer-cache.js';
import { missingFieldReason } from './errors.js';
import { SingleFlight } from './single-flight.js';
import type { StoreAccess } from './read-store-file.js';
import type { ProjectEntry } from './store-reads.js';

/** The project list at one change of the store: its body, and each project's status by id. */
export interface ListedProjects {
  readonly change: number;
  readonly statuses: ReadonlyMap<string, ProjectEntry>;
  readonly body: CachedBody;
}

export interface ProjectListOptions {
  readonly access: StoreAccess;
  readonly runner: SynthesisRunner;
  readonly bus: Bus;
  /** A nonce of this instance, in every ETag (answers of another run never match). */
  readonly nonce: string;
  readonly log: (fields: Record<string, unknown>, message: string) => void;
}

export class ProjectList {
  private list: ListedProjects | undefined;
  /** Reads in flight, by the change they were started at. */
  private readonly listings = new SingleFlight<ListedProjects>();
  /** Why `projects/` could not be listed, as last reported (null when it could). */
  private listProblem: string | null = null;
  private readonly warned = new Map<string, string>();

  constructor(private readonly opts: ProjectListOptions) {}

  /** The list at store change `change`: the kept one, or one read shared by every caller at that change. @throws StoreReadTimeoutError. */
  async at(change: number): Promise<ListedProjects> {
    if (this.list && this.list.change === change) return this.list;
    // Only a read started at this change is joined: one started before it may have listed the
    // store before the change it is asked for (a project.json written meanwhile).
    return this.listings.run(String(change), () => this.read(change));
  }

  private async read(change: number): Promise<ListedProjects> {
    const listing = await this.opts.runner.read({ op: 'projects', access: this.opts.access });
    this.reportListProblem(listing.problem === null ? null : listing.problem.why);
    // Each project's bytes are a slice of the list's: nothing is parsed, serialised or copied here.
    const body = bufferOf(listing.body);
    const statuses = new Map<string, ProjectEntry>(listing.entries.map((e) => [e.id, e.kind === 'ok' ? { kind: 'ok', id: e.id, body: body.subarray(e.start, e.end) } : e] as const));
    this.reportSkipped(statuses);
    const list = { change, statuses, body: { body, etag: `W/"${this.opts.nonce}-l-${change}"` } };
    if (!this.list || this.list.change <= change) this.list = list;
    return list;
  }

  /** One warning event when `projects/` cannot be listed (a file, a link out, a loop), again when the reason changes. */
  private reportListProblem(why: string | null): void {
    if (why === this.listProblem) return;
    this.listProblem = why;
    if (why === null) return;
    this.opts.log({ folder: 'projects' }, `engine store: projects/ cannot be listed (${why})`);
    this.opts.bus.publish({
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
        this.opts.bus.publish({
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
        this.opts.log({ projectId: s.id, remediation: s.detail.remediation }, `engine store: project skipped: ${s.id} (${reason})`);
        this.opts.bus.publish({
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
export function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
