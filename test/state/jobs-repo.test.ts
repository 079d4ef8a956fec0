import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';

let dir: string;
let db: Db;
afterEach(() => {
  db?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('JobsRepo.prune', () => {
  it('keeps the newest finished jobs and every running job', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jobs-repo-'));
    db = openStateDb(path.join(dir, 'state.db'));
    const repo = new JobsRepo(db);
    for (let i = 0; i < 10; i++) {
      const id = `gen_${String(i).padStart(12, '0')}`;
      repo.insert({ proposalId: id, projectId: 'p', pid: 1000 + i, argv: ['node'], state: 'running', startedAt: `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z` });
      // The two oldest stay running.
      if (i >= 2) repo.finish(id, { state: 'exited ok', endedAt: '2026-01-02T00:00:00.000Z', rc: 0, signal: null, stdoutLines: 1, stderrLines: 0, exitReason: 'exited', exitDetail: null });
    }
    expect(repo.prune(3)).toBe(5);
    const left = repo.list(100).map((j) => j.proposalId.slice(-2));
    expect(left).toEqual(['09', '08', '07', '01', '00']);
  });
});
