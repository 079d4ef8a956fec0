// Workspace state (api-decisions.md, "Service routes with partial shape"): an opaque JSON blob per id,
// written only at the current revision; and corrupt blobs the console reports, kept for inspection.
import type { PutOutcome, WorkspaceRecord, WorkspaceReport, WorkspaceStore } from '../state/state-store.js';
import { nowIso } from './now.js';

/** Outcome of a report: stored (with its id), or refused because the blob is too large. */
export type ReportOutcome = { readonly ok: true; readonly reportId: number; readonly bytes: number } | { readonly ok: false; readonly bytes: number; readonly maxBytes: number };

export class WorkspaceStates {
  /** @param reportMaxBytes bound on a reported blob's JSON text, in bytes. */
  constructor(
    private readonly repo: WorkspaceStore,
    readonly reportMaxBytes: number,
  ) {}

  /** The stored blob, or undefined when the workspace id was never written. */
  get(wid: string): Promise<WorkspaceRecord | undefined> {
    return this.repo.get(wid);
  }

  /** Writes `state` and bumps the revision if `revision` is current (0: new); else returns the current revision. */
  put(wid: string, revision: number, state: unknown): Promise<PutOutcome> {
    return this.repo.put(wid, revision, state, nowIso());
  }

  /** Stores a corrupt blob for inspection unless its JSON text is larger than the bound. */
  async report(wid: string, blob: unknown, reason: string | null): Promise<ReportOutcome> {
    const json = JSON.stringify(blob);
    const bytes = Buffer.byteLength(json);
    if (bytes > this.reportMaxBytes) return { ok: false, bytes, maxBytes: this.reportMaxBytes };
    return { ok: true, reportId: await this.repo.addReport(wid, json, reason, nowIso()), bytes };
  }

  /** The newest reports of a workspace, newest first. */
  reports(wid: string, limit: number): Promise<WorkspaceReport[]> {
    return this.repo.reports(wid, limit);
  }
}
