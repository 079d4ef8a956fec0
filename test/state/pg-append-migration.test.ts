/**
 * `console_append` as migration 6 rewrote it (one pass over its arrays) answers exactly as
 * migration 3's did: the same random calls — unguarded and guarded events, jobs ending in the
 * batch, guards of jobs not running, tokens, retries of calls already stored, batches up to 2,000
 * — made on two databases, one at schema 5 and one at schema 6, return the same ids and leave the
 * same events, jobs and sequencer behind.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_MIGRATIONS, migrateSchema } from '../../src/state/pg/schema.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let server: TestPostgres;
let before: pg.Pool;
let after: pg.Pool;

async function database(migrations: readonly string[]): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: await server.freshDatabase(), max: 1 });
  // An idle client told of the server's stop at the end must not throw from the pool (a query's
  // error still reaches its caller).
  pool.on('error', () => undefined);
  const c = await pool.connect();
  try {
    await migrateSchema(c, migrations);
  } finally {
    c.release();
  }
  return pool;
}

beforeAll(async () => {
  server = await startPostgres();
  expect(PG_MIGRATIONS.length).toBeGreaterThanOrEqual(6);
  before = await database(PG_MIGRATIONS.slice(0, 5));
  after = await database(PG_MIGRATIONS.slice(0, 6));
}, 600_000);

afterAll(async () => {
  await before?.end();
  await after?.end();
  await server?.stop();
});

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const JOBS = ['job-a', 'job-b', 'job-c', 'job-d', 'job-e', 'job-f'];

describe('console_append after migration 6', () => {
  it('answers and stores as migration 3 did, over 300 random calls', async () => {
    const next = random(6);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
    let token = 1;
    const sent: { args: unknown[] }[] = [];
    const ids: { before: unknown; after: unknown }[] = [];
    for (let call = 0; call < 300; call++) {
      // Now and then a job starts (running again, as a restarted job's row would be), so guards keep passing.
      if (next() < 0.3) {
        const job = pick(JOBS);
        for (const p of [before, after]) {
          await p.query(
            `INSERT INTO jobs (proposal_id, instance_id, project_id, argv, state, started_at) VALUES ($1, 'i', 'p', '[]', 'running', 'now')
             ON CONFLICT (proposal_id) DO UPDATE SET state = 'running'`,
            [job],
          );
        }
      }
      let args: unknown[];
      if (next() < 0.1 && sent.length > 0) {
        // A retry of an earlier call, after some id, as the bus makes one whose outcome it does not know.
        const earlier = pick(sent).args;
        args = [...earlier.slice(0, 7), Math.floor(next() * 50)];
      } else {
        const n = next() < 0.2 ? 1 + Math.floor(next() * 2000) : 1 + Math.floor(next() * 40);
        const guarded = next() < 0.7;
        const cols: (string | null)[][] = [[], [], [], [], [], []];
        const tokens: (number | null)[] = [];
        for (let i = 0; i < n; i++) {
          const job = guarded && next() < 0.95 ? pick(JOBS) : null;
          cols[0]?.push(pick(['info', 'warning', 'failure']));
          cols[1]?.push(job ? `proposal/${job}/job` : 'console/x');
          cols[2]?.push(job ?? (next() < 0.5 ? null : 'prop-x'));
          cols[3]?.push(JSON.stringify({ ts: 't', n: i, text: 'é "quoted" \\ line' }));
          cols[4]?.push(job);
          cols[5]?.push(job && next() < 0.01 ? JSON.stringify({ state: 'exited ok', endedAt: 'e', rc: 0, signal: null, stdoutLines: i, stderrLines: 0, exitReason: 'exit', exitDetail: null }) : null);
          tokens.push(next() < 0.9 ? token++ : null);
        }
        args = [...cols, next() < 0.1 ? null : tokens, null];
        sent.push({ args });
      }
      const sql = 'SELECT console_append($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint) AS ids';
      const a = (await before.query(sql, args)).rows[0]?.ids;
      const b = (await after.query(sql, args)).rows[0]?.ids;
      ids.push({ before: a, after: b });
      expect(b, `call ${call}`).toEqual(a);
    }
    const dump = async (p: pg.Pool) => ({
      events: (await p.query('SELECT id, severity, scope, proposal_id, data, token FROM events ORDER BY id')).rows,
      jobs: (await p.query('SELECT proposal_id, state, ended_at, rc, stdout_lines, exit_reason FROM jobs ORDER BY proposal_id')).rows,
      last: (await p.query('SELECT last_id FROM event_sequencer')).rows,
    });
    const [x, y] = [await dump(before), await dump(after)];
    expect(x.events.length).toBeGreaterThan(10_000);
    expect(x.jobs.some((j) => j.state === 'exited ok')).toBe(true);
    expect(ids.some((r) => Array.isArray(r.before) && (r.before as unknown[]).includes(null))).toBe(true);
    expect(y).toEqual(x);
  }, 600_000);
});
