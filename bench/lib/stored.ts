/**
 * "Every line stored": reads the generation line events of a stopped service's state
 * database through the `events` view (which the service keeps for readers outside it), and
 * checks per job that the stored lines are numbered 1, 2, 3… in id order. The service must
 * have been stopped (the database closed) and started with a retention bound above the
 * number of events of the run, or its oldest lines are gone by design.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { REPO_ROOT } from './paths.js';

// The service's SQLite binding for this runtime, from its build: the bench compiles apart from src/.
const binding = pathToFileURL(path.join(REPO_ROOT, 'dist', 'state', 'sqlite', 'binding.js')).href;
const Database = ((await import(binding)) as { default: typeof BetterSqlite3 }).default;

export interface StoredLines {
  /** Stored stdout lines, by proposal id. */
  readonly perJob: Record<string, number>;
  readonly total: number;
  /** First problems found (a gap, a repeat, a line out of order). */
  readonly problems: string[];
}

const LINE = ' stdout line ';

/** Counts and checks the stored stdout line events of every job in `<stateDir>/console-state.db`. */
export function storedLines(stateDir: string): StoredLines {
  const db = new Database(path.join(stateDir, 'console-state.db'), { readonly: true, fileMustExist: true });
  const next = new Map<string, number>();
  const problems: string[] = [];
  let total = 0;
  try {
    const rows = db.prepare(`SELECT data FROM events WHERE scope = 'engine/generation' AND severity = 'info' ORDER BY id`).raw().iterate() as Iterable<[string]>;
    for (const [data] of rows) {
      // `"detail":"gen_<12 hex> stdout line <n>"`: found without parsing the whole event.
      const at = data.indexOf(LINE);
      if (at === -1) continue; // a spawn event
      const job = data.slice(at - 16, at);
      const n = Number.parseInt(data.slice(at + LINE.length), 10);
      const want = next.get(job) ?? 1;
      if (n !== want && problems.length < 5) problems.push(`stored ${job} line ${n}, expected ${want}`);
      next.set(job, n + 1);
      total++;
    }
  } finally {
    db.close();
  }
  return { perJob: Object.fromEntries([...next].map(([job, n]) => [job, n - 1])), total, problems };
}
