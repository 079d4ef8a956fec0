/**
 * State database faults. The service runs as its own process from the
 * compiled `dist/` (as `npm start` runs it), on real faults of the file system:
 * - a read-only state folder: a read-only bind mount (EROFS, which root cannot bypass), and a
 *   folder the service's user cannot write (the service run as root without its file-permission
 *   override, with setpriv: EACCES);
 * - a full disk: a small tmpfs filled with a file of zeros (ENOSPC, SQLITE_FULL);
 * - a corrupt database file: garbage bytes, and a real database cut short.
 * Each stops start-up with a message naming the path and saying why, exit code 1, nothing
 * served (no listening socket of the service's, read from /proc: a connect could reach another
 * test's process on the freed port), and a database file that was there is left byte for byte as it was.
 * Then the disk fills while the service runs and a job prints lines: the service stays up,
 * serves reads, refuses writes with a 507 and a detail, holds the events it cannot store and
 * stores them once there is space again; nothing acknowledged is lost (checked after a restart); a SIGTERM
 * while the disk is full still ends the streams, kills the running job and exits 0.
 */
import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER, type EventInput } from '../../src/bus/event.js';
import { SqliteCommitter } from '../../src/state/sqlite/committer.js';
import { openStateDb } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { SqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { WITHOUT_FILE_OVERRIDE } from '../helpers/process.js';
import { fixture, SAMPLE_STORE, startTestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';
import { gone, killMarked } from '../process/helpers.js';
import { treeProcesses } from '../../src/process/proc-scan.js';
import { bindReadOnly, canMount, fillDisk, mountTmpfs } from '../helpers/mounts.js';
import { failedStart, holdsListener, startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';

const DB = 'console-state.db';
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Mounting needs root and a kernel that allows it (checked once). */
const MOUNTABLE = canMount();

/** A temp root with a store copy, readable by every user (for the setpriv case). */
function makeRoot(): { tmp: string; store: string } {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rel-a-statedb-'));
  fs.chmodSync(tmp, 0o755);
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
  return { tmp, store };
}

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const listing = (dir: string) => fs.readdirSync(dir).sort();

/** A real state database with some events in it, closed cleanly (no WAL left). */
async function realDatabase(tmp: string): Promise<string> {
  const t = await startTestService({ store: 'empty' });
  for (let i = 0; i < 200; i++) expect((await t.post('/api/internal/bus', { severity: 'info', scope: 'seed', summary: `seed ${i} ${'x'.repeat(300)}` })).status).toBe(202);
  await t.stop();
  const file = path.join(tmp, 'seed.db');
  fs.copyFileSync(path.join(t.stateDir, DB), file);
  fs.rmSync(t.tmp, { recursive: true, force: true });
  return file;
}

/** Starts the service on `stateDir` expecting it to refuse; checks the common promises. */
async function expectRefusal(store: string, stateDir: string, message: RegExp, wrapper?: string[]): Promise<string> {
  const r = await failedStart({ env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: stateDir }, ...(wrapper ? { wrapper } : {}) });
  expect({ code: r.code, signal: r.signal }).toEqual({ code: 1, signal: null });
  expect(r.listened, `the service must serve nothing (its stderr: ${r.stderr.trim()})`).toBe(false);
  const line = r.stderr.trim();
  expect(line).toContain(`console-backend: cannot open state database ${path.join(stateDir, DB)}: `);
  expect(line).toMatch(message);
  return line;
}

const reasons: string[] = [];
const note = (what: string, line: string) => reasons.push(`${what}: ${line.replace(/^console-backend: /, '')}`);
afterAll(() => {
  if (reasons.length > 0) console.log(`state-db-faults: ${reasons.length} start-ups refused (exit 1, nothing served, files unchanged):\n  ${reasons.join('\n  ')}`);
});

describe('start-up on a state folder that cannot be written', () => {
  it('this machine can mount file systems for the tests (root, mount(8))', () => {
    // Said plainly rather than skipped silently: the fault tests below need it.
    expect(MOUNTABLE, 'mounting a tmpfs failed: run the tests as root on a machine that allows mount(2)').toBe(true);
  });

  it.runIf(MOUNTABLE)('a read-only file system (bind mount, EROFS): the folder, a folder to create, an existing database', async () => {
    const { tmp, store } = makeRoot();
    // Empty, and a subfolder the service would have to create.
    const src = path.join(tmp, 'ro-src');
    fs.mkdirSync(src);
    const ro = path.join(tmp, 'ro');
    cleanups.push(bindReadOnly(src, ro));
    note('read-only folder', await expectRefusal(store, ro, new RegExp(`: ${ro} is on a read-only file system`)));
    note('read-only parent', await expectRefusal(store, path.join(ro, 'sub'), new RegExp(`the folder ${ro}/sub cannot be created: ${ro} is on a read-only file system`)));
    expect(listing(src)).toEqual([]);

    // A database written before, now on a read-only mount: refused, untouched.
    const withDb = path.join(tmp, 'with-db');
    fs.mkdirSync(withDb);
    fs.copyFileSync(await realDatabase(tmp), path.join(withDb, DB));
    const before = sha(path.join(withDb, DB));
    const roDb = path.join(tmp, 'ro-db');
    cleanups.push(bindReadOnly(withDb, roDb));
    note('read-only database', await expectRefusal(store, roDb, new RegExp(`: ${roDb} is on a read-only file system`)));
    expect(sha(path.join(withDb, DB))).toBe(before);
    expect(listing(withDb)).toEqual([DB]);
  });

  it('a folder the service user cannot write (setpriv: root without its file-permission override, EACCES)', async () => {
    const { tmp, store } = makeRoot();
    const locked = path.join(tmp, 'locked');
    fs.mkdirSync(locked);
    fs.chmodSync(locked, 0o555);
    // Root, so it reaches the project wherever it was cloned (another user could not cross a
    // 0700 temp folder); without CAP_DAC_OVERRIDE, so permission bits hold for it.
    const limited = [...WITHOUT_FILE_OVERRIDE];
    note('folder not writable', await expectRefusal(store, locked, new RegExp(`: ${locked} is not writable by this user \\(permission denied\\)`), limited));
    // A database the user may read but not write (a 0444 file in a writable folder).
    const theirs = path.join(tmp, 'theirs');
    fs.mkdirSync(theirs);
    fs.copyFileSync(await realDatabase(tmp), path.join(theirs, DB));
    fs.chmodSync(path.join(theirs, DB), 0o444);
    const before = sha(path.join(theirs, DB));
    note('database not writable', await expectRefusal(store, theirs, /is not writable by this user \(permission denied\)/, limited));
    expect(sha(path.join(theirs, DB))).toBe(before);
    expect(listing(theirs)).toEqual([DB]);
  });
});

describe('start-up on a full disk', () => {
  it.runIf(MOUNTABLE)('a new database, and an existing one: refused naming the folder, the file untouched', async () => {
    const { tmp, store } = makeRoot();
    const full = path.join(tmp, 'full');
    cleanups.push(mountTmpfs(full, '2m'));
    const filler = fillDisk(full);
    note('full disk, new database', await expectRefusal(store, full, new RegExp(`: no space left on the disk of ${full} \\(database or disk is full\\)`)));
    fs.rmSync(filler.file);
    // Once there is room, it starts there (the empty file SQLite made is a valid empty database).
    const ok = await startServiceProcess({ env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: full } });
    expect(
      (await (
        await fetch(`${ok.url}/api/internal/bus`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ severity: 'info', scope: 'x', summary: 'kept' }) })
      ).json()) as { id: string },
    ).toHaveProperty('id');
    expect(await ok.stop()).toEqual([0, null]);

    // The database exists; the disk fills while the service is stopped.
    const before = sha(path.join(full, DB));
    const filled = fillDisk(full);
    note('full disk, existing database', await expectRefusal(store, full, new RegExp(`: no space left on the disk of ${full}`)));
    expect(sha(path.join(full, DB))).toBe(before);
    fs.rmSync(filled.file);
    const again = await startServiceProcess({ env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: full } });
    expect((await allEvents(again.url, 'scopePrefix=x')).map((e) => e.summary)).toEqual(['kept']);
    expect(await again.stop()).toEqual([0, null]);
  });
});

describe('the probe of a refused start-up', () => {
  it("counts the service's own listening socket, never another process's on the same port", async () => {
    const { tmp, store } = makeRoot();
    const svc = await startServiceProcess({ env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: path.join(tmp, 'state') } });
    cleanups.push(() => svc.stop());
    expect(holdsListener(svc.child.pid as number, svc.port)).toBe(true);
    // Another process (not under the service) holds no socket on the service's port; the service holds none on this one's.
    const other = spawn('sleep', ['600'], { stdio: 'ignore' });
    cleanups.push(() => other.kill('SIGKILL'));
    expect(holdsListener(other.pid as number, svc.port)).toBe(false);
    const own = net.createServer().listen(0, '127.0.0.1');
    await once(own, 'listening');
    cleanups.push(() => new Promise((r) => own.close(r)));
    const ownPort = (own.address() as net.AddressInfo).port;
    expect(holdsListener(process.pid, ownPort)).toBe(true);
    expect(holdsListener(svc.child.pid as number, ownPort)).toBe(false);
  });
});

describe('start-up on a corrupt database file', () => {
  it('garbage bytes, a database cut short: reported naming the file, never replaced nor changed', async () => {
    const { tmp, store } = makeRoot();
    const real = await realDatabase(tmp);
    const size = fs.statSync(real).size;
    const cases: [string, Buffer][] = [
      ['garbage', randomBytes(8192)],
      ['text', Buffer.from('not a database at all\n'.repeat(100))],
      ['cut to half', fs.readFileSync(real).subarray(0, Math.floor(size / 2))],
      ['cut mid-page', fs.readFileSync(real).subarray(0, 10_000)],
      ['header only', fs.readFileSync(real).subarray(0, 100)],
      // The header intact, a page in the middle overwritten: found by the start-up check.
      ['page overwritten', Buffer.concat([fs.readFileSync(real).subarray(0, 4096 * 8), randomBytes(4096), fs.readFileSync(real).subarray(4096 * 9)])],
    ];
    for (const [what, bytes] of cases) {
      const dir = path.join(tmp, what.replace(/\W+/g, '-'));
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, DB), bytes);
      const line = await expectRefusal(
        store,
        dir,
        /not a valid SQLite database \((file is not a database|database disk image is malformed.*)\); the file was left as it is: move it away to start with an empty state, or restore a backup$/,
      );
      note(`corrupt (${what})`, line);
      expect({ what, sha: sha(path.join(dir, DB)) }).toEqual({ what, sha: createHash('sha256').update(bytes).digest('hex') });
      expect({ what, files: listing(dir) }).toEqual({ what, files: [DB] });
    }
  });
});

describe('the disk fills while the service runs', () => {
  it.runIf(MOUNTABLE)('stays up, serves reads, refuses writes with 507, holds the events of a running job and stores them once there is room; nothing acknowledged is lost', async () => {
    const { tmp, store } = makeRoot();
    const stateDir = path.join(tmp, 'state');
    cleanups.push(mountTmpfs(stateDir, '6m'));
    const LINES = 3000;
    const env = {
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      DISPATCH_CLI: fixture('ev-lines.mjs'),
      // The job prints its lines over about three seconds (its knobs come from the environment).
      EV_LINES: String(LINES),
      EV_BATCH: '20',
      EV_INTERVAL_MS: '20',
      EV_PAD: '100',
      LOG_LEVEL: 'warn',
    };
    let svc: ServiceProcess = await startServiceProcess({ env });
    cleanups.push(() => svc.stop());
    // A stream client throughout: it must never see an event that is not stored.
    const sse = new SseClient(`${svc.url}/api/events/stream`);
    cleanups.push(() => sse.close());
    await sse.until((c) => c.status === 200 && c.frames.length > 0, 'the stream to open');
    const post = (p: string, body: unknown, method = 'POST') => fetch(`${svc.url}${p}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    // Acknowledged before the fault.
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `before ${i}` });
      expect(r.status).toBe(202);
      acked.push(((await r.json()) as { id: string }).id);
    }
    const job = (await (await post('/api/proposals/generate', { project: 'harbor-lights' })).json()) as { proposalId: string };
    expect(job.proposalId).toMatch(/^gen_/);

    // The disk fills while the job prints.
    const filler = fillDisk(stateDir);
    const tried = { writes: 0, acked: 0, refused: 0 };
    const refusals = new Map<number, string>();
    let summary = 0;
    // Events go on until the database needs room it cannot have (its WAL and file must grow).
    while (refusals.size === 0 || tried.writes < 40) {
      expect(tried.writes, 'the database never ran out of room').toBeLessThan(20_000);
      const r = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `during ${summary++} ${'d'.repeat(1000)}` });
      tried.writes++;
      const body = (await r.json()) as { id?: string; detail?: string };
      if (r.status === 202) {
        tried.acked++;
        acked.push(body.id as string);
      } else {
        tried.refused++;
        expect(r.status).toBe(507);
        expect(body.detail).toMatch(/^state database full \(no space left on its disk\): nothing was stored \(database or disk is full\)$/);
        refusals.set(r.status, body.detail as string);
      }
    }
    // Every kind of write is refused the same way, and none is half done. One may still commit
    // while the disk is full (after a checkpoint SQLite writes its log from the start again, which
    // needs no new room): it is acknowledged and must be found after the restart. So each kind is
    // tried until the database needs room it cannot have.
    const during = { proposals: [] as string[], clicks: [] as string[], workspaceRevision: 0 };
    const kinds: [string, () => Promise<Response>, (body: Record<string, unknown>) => void][] = [
      ['proposal', () => post('/api/proposals', { title: 'during the outage' }), (b) => during.proposals.push(b.proposalId as string)],
      ['click', () => post('/api/clicks', { projectId: 'harbor-lights', target: 'x' }), (b) => during.clicks.push(String(b.id))],
      ['workspace', () => post('/api/workspace-state/ws-full', { revision: during.workspaceRevision, state: { a: 1 } }, 'PUT'), (b) => (during.workspaceRevision = b.revision as number)],
    ];
    for (const [kind, write, acknowledged] of kinds) {
      for (let tries = 0; ; tries++) {
        expect(tries, `a ${kind} refused while the disk is full`).toBeLessThan(200);
        const r = await write();
        const body = (await r.json()) as Record<string, unknown>;
        if (r.status !== 507) {
          expect(r.status, JSON.stringify(body)).toBeLessThan(300);
          acknowledged(body);
          continue;
        }
        expect(body.detail).toMatch(/^state database full/);
        break;
      }
    }
    // Reads go on.
    for (const p of ['/api/health', '/api/projects', '/api/events?limit=5', '/api/jobs', '/api/system-status', `/api/workspace-state/ws-full`]) {
      const r = await fetch(`${svc.url}${p}`);
      expect({ p, status: r.status }).toEqual({ p, status: p.includes('ws-full') && during.workspaceRevision === 0 ? 404 : 200 });
    }
    // Not ready for a balancer while events cannot be stored.
    const notReady = await waitFor(async () => {
      const r = await fetch(`${svc.url}/api/ready`);
      const body = (await r.json()) as { checks: { name: string; ok: boolean; detail: string }[] };
      return r.status === 503 ? body : undefined;
    }, 'readiness to fail while the disk is full');
    expect(notReady.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['stateDatabase']);
    expect(notReady.checks.find((c) => c.name === 'stateDatabase')?.detail).toMatch(/^events cannot be stored since .*: database or disk is full$/);
    // The job ends while the disk is still full; its exit is known, the service is up.
    const ended = await waitFor(async () => {
      const r = (await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as { state: string; stdoutLines: number };
      return r.state === 'running' ? undefined : r;
    }, 'the job to end');
    expect(ended).toMatchObject({ state: 'exited ok', stdoutLines: LINES });
    expect(svc.child.exitCode).toBeNull();

    // Room again: the held events are stored, and an event says what happened.
    fs.rmSync(filler.file);
    const outage = await waitFor(async () => (await allEvents(svc.url, 'scopePrefix=service/state'))[0], 'the event of the outage');
    expect(outage).toMatchObject({
      severity: 'warning',
      summary: 'events stored late: the state database could not store them for a while',
      payload: { dropped: 0, error: 'database or disk is full' },
    });
    expect((await fetch(`${svc.url}/api/ready`)).status).toBe(200);
    const after = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: 'after' });
    expect(after.status).toBe(202);
    const afterId = ((await after.json()) as { id: string }).id;
    acked.push(afterId);
    await sse.until((c) => c.events.some((e) => e.id === afterId), 'the stream to deliver the last write');
    sse.close();
    expect(await svc.stop()).toEqual([0, null]);

    // After a restart: every acknowledged write, the job's every line and its exit, ids in order.
    svc = await startServiceProcess({ env });
    const all = await allEvents(svc.url);
    const ids = all.map((e) => BigInt(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i] as bigint).toBeGreaterThan(ids[i - 1] as bigint);
    const stored = new Set(all.map((e) => e.id));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    // The stream delivered in order, once each, only stored events, the held ones included.
    const streamed = sse.events.map((e) => e.id);
    expect(streamed.filter((id) => !stored.has(id))).toEqual([]);
    for (let i = 1; i < streamed.length; i++) expect(BigInt(streamed[i] as string)).toBeGreaterThan(BigInt(streamed[i - 1] as string));
    expect(sse.events.filter((e) => e.detail?.startsWith(`${job.proposalId} stdout line `))).toHaveLength(LINES);
    const lines = all.filter((e) => e.scope === 'engine/generation' && e.detail?.startsWith(`${job.proposalId} stdout line `));
    expect(lines.map((e: EngineEvent) => e.summary.split(' ').slice(0, 2).join(' '))).toEqual(Array.from({ length: LINES }, (_, i) => `line ${i + 1}`));
    expect(all.some((e) => e.summary === 'dispatch_cli exited rc=0' && e.payload.proposal_id === job.proposalId)).toBe(true);
    expect((await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as object).toMatchObject({ state: 'exited ok', stdoutLines: LINES });
    // The writes acknowledged while the disk was full, found.
    const proposals = JSON.stringify(await (await fetch(`${svc.url}/api/proposals`)).json());
    for (const id of during.proposals) expect(proposals, `proposal ${id}`).toContain(`"${id}"`);
    const clicks = ((await (await fetch(`${svc.url}/api/clicks?projectId=harbor-lights&limit=1000`)).json()) as { id: unknown }[]).map((c) => String(c.id));
    for (const id of during.clicks) expect(clicks, `click ${id}`).toContain(id);
    const workspace = await fetch(`${svc.url}/api/workspace-state/ws-full`);
    if (during.workspaceRevision === 0) expect(workspace.status).toBe(404);
    else expect(((await workspace.json()) as { revision: number }).revision).toBe(during.workspaceRevision);
    console.log(
      `state-db-faults: disk full at run time: ${tried.writes} writes tried while full (${tried.acked} acknowledged, ${tried.refused} refused with 507), ${LINES} job lines all stored and streamed (${(outage.payload as { held: number }).held} events held at most), ${acked.length} acknowledged events and ${during.proposals.length + during.clicks.length + (during.workspaceRevision > 0 ? 1 : 0)} other writes acknowledged while full all found after a restart, ${streamed.length} streamed events all stored, service never down`,
    );
  });
});

describe('a shutdown while the disk is full', () => {
  it.runIf(MOUNTABLE)('SIGTERM while events are held: the streams end, the running job’s process tree is killed, exit 0', async () => {
    const { tmp, store } = makeRoot();
    const stateDir = path.join(tmp, 'state');
    cleanups.push(mountTmpfs(stateDir, '6m'));
    const env = {
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      DISPATCH_CLI: fixture('ev-lines.mjs'),
      // A job that prints a padded line every 20 ms, for far longer than the test.
      EV_LINES: '1000000',
      EV_BATCH: '1',
      EV_INTERVAL_MS: '20',
      EV_PAD: '100',
      LOG_LEVEL: 'warn',
    };
    const svc = await startServiceProcess({ env });
    cleanups.push(() => svc.stop());
    const sse = new SseClient(`${svc.url}/api/events/stream`);
    cleanups.push(() => sse.close());
    await sse.until((c) => c.status === 200 && c.frames.length > 0, 'the stream to open');
    const post = (p: string, body: unknown) => fetch(`${svc.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const job = (await (await post('/api/proposals/generate', { project: 'harbor-lights' })).json()) as { proposalId: string };
    expect(job.proposalId).toMatch(/^gen_/);
    const mark = `CONSOLE_JOB_ID=${job.proposalId}`;
    cleanups.push(() => killMarked(mark));
    await sse.until((c) => c.events.some((e) => e.detail?.startsWith(`${job.proposalId} stdout line `)), 'the job’s first line');
    const tree = treeProcesses(null, null, mark).map((p) => p.pid);
    expect(tree.length).toBeGreaterThan(0);

    // The disk fills: writes are refused, the job's lines are held.
    fillDisk(stateDir);
    for (let tries = 0; ; tries++) {
      expect(tries, 'the database never ran out of room').toBeLessThan(20_000);
      const r = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `during ${tries} ${'d'.repeat(1000)}` });
      if (r.status === 507) break;
      expect(r.status).toBe(202);
    }
    await waitFor(async () => ((await fetch(`${svc.url}/api/ready`)).status === 503 ? true : undefined), 'readiness to fail while the disk is full');

    // The streams' final flush comes while the disk is still full: the shutdown goes on to the end.
    expect(await svc.stop()).toEqual([0, null]);
    expect(sse.ended, 'the stream to be ended by the service').toBe(true);
    expect(
      tree.filter((pid) => !gone(pid)),
      'the job’s processes left running',
    ).toEqual([]);
    expect(svc.stderr()).not.toMatch(/shutdown failed/);
  });
});

describe('the event bus while the state database refuses writes', () => {
  /** A bus on a real database file, with a subscriber that records the ids it receives. */
  function busOn(maxUnstored: number) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rel-a-bus-'));
    const db = openStateDb(path.join(tmp, DB));
    cleanups.push(() => {
      db.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    });
    const states: string[] = [];
    const eventLog = new EventLog(db, 10_000);
    const bus = new EventBus(eventLog, { maxUnstored, retryMs: 20, onStorageState: (s) => states.push(s) });
    const committer = new SqliteCommitter(new SqliteStateStore(db, { instanceId: 'local', eventRetention: 10_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog }), bus);
    const got: number[] = [];
    bus.subscribe((batch) => got.push(...batch.map((r) => r.id)));
    // What the database holds, read straight from it (the bus's own reads flush first).
    const stored = () => (db.prepare('SELECT id FROM events ORDER BY id').all() as { id: number }[]).map((r) => r.id);
    return { db, bus, committer, states, got, stored };
  }
  const ev = (summary: string): EventInput => ({ severity: 'info', scope: 'test', summary });
  const tick = () => new Promise((r) => setImmediate(r));

  it('holds what it cannot store (bounded, the excess counted), delivers nothing unstored, refuses stored publishes, and says what happened once it stores again', async () => {
    const { db, bus, states, got, stored } = busOn(20);
    bus.publishStored(ev('before'));
    expect(got).toEqual([1]);
    // SQLite refuses every write from now on (SQLITE_READONLY), as a full or read-only disk would.
    db.pragma('query_only = ON');
    for (let i = 0; i < 50; i++) bus.publish(ev(`held ${i}`)); // never throws at a producer
    await tick();
    expect(states).toEqual(['failing']);
    expect(bus.storageOutage).toMatchObject({ held: 20, dropped: 30 });
    expect(() => bus.publishStored(ev('refused'))).toThrow(/readonly/);
    expect(got).toEqual([1]);
    expect(stored()).toEqual([1]);

    db.pragma('query_only = OFF');
    await waitFor(() => (bus.storageOutage === null ? true : undefined), 'the retry to store the held events');
    await tick();
    expect(states).toEqual(['failing', 'recovered']);
    // The newest 20 of the 50 held (ids 32..51), never the refused one (52), then the report.
    const outage = (await bus.readNewest(1, NO_FILTER))[0] as { id: number; data: string };
    expect(JSON.parse(outage.data)).toMatchObject({ severity: 'failure', scope: 'service/state', summary: '30 events lost: the state database could not store them' });
    expect(got).toEqual([1, ...Array.from({ length: 20 }, (_, i) => 32 + i), outage.id]);
    expect(stored()).toEqual(got);
  });

  it('a refused stored publish with nothing else queued: once writes work again the outage ends with its report, and later publishes are stored', async () => {
    const { db, bus, states, got, stored } = busOn(20);
    bus.publishStored(ev('before'));
    db.pragma('query_only = ON');
    // The only event that failed is withdrawn with its refusal: nothing is held.
    expect(() => bus.publishStored(ev('refused'))).toThrow(/readonly/);
    expect(bus.storageOutage).toMatchObject({ held: 0 });
    db.pragma('query_only = OFF');
    // The retry stores the outage's report: that is its attempt, and its success ends the outage.
    await waitFor(() => (bus.storageOutage === null ? true : undefined), 'the end of the outage');
    expect(states).toEqual(['failing', 'recovered']);
    bus.publish(ev('after'));
    await waitFor(() => (got.length === 3 ? true : undefined), 'the later publish stored and delivered');
    const summaries = (db.prepare('SELECT data FROM events ORDER BY id').all() as { data: string }[]).map((r) => JSON.parse(r.data).summary as string);
    expect(summaries).toEqual(['before', 'events stored late: the state database could not store them for a while', 'after']);
    expect(stored()).toEqual(got);
  });

  it('a console write rolled back at its commit delivers none of its events; events queued before it are stored and delivered once', async () => {
    const { db, bus, committer, got, stored } = busOn(1000);
    db.exec('CREATE TABLE t_parent (id INTEGER PRIMARY KEY); CREATE TABLE t_child (p INTEGER REFERENCES t_parent (id))');
    bus.publish(ev('queued 1'));
    bus.publish(ev('queued 2'));
    // A commit that fails after the events were written in the transaction (a deferred foreign
    // key fails at COMMIT, as a full disk does when the WAL must grow).
    await expect(
      committer.commit(async () => {
        db.pragma('defer_foreign_keys = ON');
        db.prepare('INSERT INTO t_child (p) VALUES (42)').run();
        return { result: null, events: [ev('the write')] };
      }),
    ).rejects.toThrow(/FOREIGN KEY/);
    expect(got).toEqual([]);
    expect(stored()).toEqual([]);
    await tick();
    expect(got).toEqual([1, 2]);
    expect(stored()).toEqual([1, 2]);
    // The next write commits with its event; ids go on increasing (3 was the rolled-back one's).
    const { events } = await committer.commit(async () => ({ result: null, events: [ev('next write')] }));
    expect(events.map((e) => e.id)).toEqual(['4']);
    expect(got).toEqual([1, 2, 4]);
    expect(stored()).toEqual([1, 2, 4]);
  });
});
