/**
 * Bad input: property-based (fast-check) requests across every declared
 * route, spoilt in every way a client can spoil them. The service runs as its own process
 * (compiled `dist/`, as `npm start` runs it), under strace when the machine has it, so that
 * every file it touches after start-up is seen.
 *
 * What must hold: no 5xx; every rejection is a 400, 404, 405, 413 or 422 (or a status the
 * target route documents: 403, 409, 410, 412, 416) with a `detail`; a body holding `__proto__`
 * is a 422 `forbidden_member`; no answer carries the content
 * of a file outside the store (sentinels planted next to the store, and inside a project
 * where only traversal reaches them); no file outside the store and the state folder is
 * opened or even looked up by the service after start-up.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from '../../src/http/route.js';
import { fixture, REPO_ROOT, SAMPLE_STORE, startTestService } from '../helpers/service.js';
import { anyRequestArb, describeReq, type AimedReq, type Targets } from '../helpers/bad-requests.js';
import { KeepAliveClient, type RawRes } from '../helpers/raw-client.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';
import { accessesAfter, hasStrace, straceWrapper, within, type FileAccess } from '../helpers/strace.js';
import { PERL_PLACES } from '../../src/process/spawn-helper-protocol.js';

/** Requests per property run, sent concurrently over the keep-alive pool. */
const BATCH = 50;
const RUNS = 210;
const MIN_REQUESTS = 10_000;
const MAX_BODY = 32_768;
const STARTUP_MARKER = 'rel-a-startup-marker.svg';
/** The dispatch tool exits at once; the terminal program is a stand-in: no 5xx for a real reason. */
const DISPATCH = fixture('exit-3.mjs');
const TTYD = fixture('ttyd-standin.mjs');
/**
 * Statuses any route may answer to bad input; 431 is Node's parser refusing a request line
 * and headers past 16 KB (an id of 10 KB, percent-encoded); 405 a method the path is not
 * served with.
 */
const REJECTIONS = new Set([400, 404, 405, 413, 422, 431]);
/**
 * Statuses allowed where the aimed route documents them (a real condition, not bad input);
 * 403: the internal bus refuses a request carrying a proxy's header (X-Forwarded-For…), which
 * the generated headers include.
 */
const DOCUMENTED = new Set([403, 409, 410, 412, 416]);

let tmp: string;
let store: string;
let stateDir: string;
let routes: readonly RouteSpec[];
let svc: ServiceProcess;
let client: KeepAliveClient;
let straceFile: string | null = null;
let targets: Targets;
/** Sentinel contents: none may ever appear in an answer. */
const secrets: string[] = [];

const figures = {
  requests: 0,
  statuses: new Map<number, number>(),
  kinds: new Map<string, number>(),
  perRoute: new Map<string, number>(),
  ms: 0,
};

beforeAll(async () => {
  // Every route, as the service declares it (an in-process instance of the same code).
  const t = await startTestService({ store: 'empty' });
  routes = [...t.service.api.routes];
  await t.close();

  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rel-a-bad-input-'));
  store = path.join(tmp, 'store');
  stateDir = path.join(tmp, 'state');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  const plant = (file: string, label: string) => {
    const secret = `${label}-${randomBytes(12).toString('hex')}`;
    fs.writeFileSync(file, `${secret}\n`);
    secrets.push(secret);
  };
  const project = path.join(store, 'projects', 'harbor-lights');
  targets = {
    outsideName: 'rel-a-sentinel-outside.txt',
    outsideAbs: path.join(tmp, 'rel-a-sentinel-outside.txt'),
    insideName: 'rel-a-sentinel-inside.txt',
    dotName: '.rel-a-sentinel-dot',
    maxBodyBytes: MAX_BODY,
  };
  plant(targets.outsideAbs, 'SENTINEL-OUTSIDE');
  plant(path.join(project, targets.insideName), 'SENTINEL-INSIDE');
  plant(path.join(project, 'media', targets.dotName), 'SENTINEL-DOT');
  // A take file and a memory entry outside the store, named as valid ids would name them.
  plant(path.join(tmp, 'tk_0001.json'), 'SENTINEL-TAKE');
  plant(path.join(tmp, 'style-palette.json'), 'SENTINEL-MEMORY');

  const range = 20_000 + Math.floor(Math.random() * 500) * 20;
  straceFile = hasStrace() ? path.join(tmp, 'strace.txt') : null;
  svc = await startServiceProcess({
    env: {
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      // The conditions whose documented answer is a 5xx do not arise: the dispatch tool exists
      // (and exits at once), a terminal program exists, the job cap is out of reach.
      DISPATCH_CLI: DISPATCH,
      TTYD_BIN: TTYD,
      TTYD_COMMAND: JSON.stringify(['true']),
      CONSOLE_TTYD_PORTS: `${range}-${range + 19}`,
      CONSOLE_TTYD_READY_MS: '60000',
      CONSOLE_MAX_RUNNING_JOBS: '4096',
      CONSOLE_MAX_BODY_BYTES: String(MAX_BODY),
      CONSOLE_KILL_GRACE_MS: '1000',
      LOG_LEVEL: 'error',
    },
    ...(straceFile ? { wrapper: straceWrapper(straceFile) } : {}),
  });
  client = new KeepAliveClient(svc.url, 8);
  // Start-up is over: this lookup (a 404) marks the point in the trace after which the service
  // only does what requests make it do.
  expect((await fetch(`${svc.url}/api/media/harbor-lights/${STARTUP_MARKER}`)).status).toBe(404);
});

afterAll(async () => {
  client?.close();
  if (svc) await svc.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** What is wrong with one answer, or null. */
function judge(r: AimedReq, res: RawRes): string | null {
  if (res.status >= 500) return `a ${res.status}`;
  // A write from a page of another site is refused before its body is read (origin-check.ts),
  // on every route: documented for every POST, PUT and DELETE.
  const origin = Object.entries(r.headers ?? {}).find(([k]) => k.toLowerCase() === 'origin');
  if (res.status === 403 && res.text.includes('"code":"cross_site_request"')) {
    return origin !== undefined && !['GET', 'HEAD', 'OPTIONS'].includes(r.method.toUpperCase()) ? null : 'a cross_site_request refusal of a request without Origin, or of a read';
  }
  // A body past the limit is a 413 on every route (the body is read before routing), unless the
  // request never got that far: a CORS preflight, or a request line the parser refused.
  if (/^over-limit|gzip-bomb/.test(r.kind) && res.status !== 413 && r.method !== 'OPTIONS' && res.status !== 431 && !/malformed HTTP request/.test(res.text)) {
    return `a ${res.status} instead of 413 for a body past CONSOLE_MAX_BODY_BYTES`;
  }
  // A `__proto__` member anywhere in a JSON body is refused where bodies enter, whatever the
  // route, unless the request never got that far (as above).
  if (r.kind === 'proto-member' && r.method !== 'OPTIONS' && res.status !== 431 && !/malformed HTTP request/.test(res.text)) {
    if (res.status !== 422 || !res.text.includes('"type":"forbidden_member"')) return `a ${res.status} instead of a 422 forbidden_member for a body holding __proto__`;
  }
  if (res.aborted) return 'an answer cut before its end';
  for (const s of secrets) if (res.text.includes(s)) return `the content of a sentinel (${s.split('-').slice(0, 2).join('-')})`;
  if (res.status >= 400) {
    if (!REJECTIONS.has(res.status) && !(DOCUMENTED.has(res.status) && r.route.answers[res.status])) return `an undocumented ${res.status}`;
    let detail: unknown;
    try {
      detail = (JSON.parse(res.text) as { detail?: unknown }).detail;
    } catch {
      return `a ${res.status} whose body is not JSON: ${JSON.stringify(res.text.slice(0, 200))}`;
    }
    if (detail === undefined || detail === null || detail === '') return `a ${res.status} without a detail: ${res.text.slice(0, 200)}`;
  }
  return null;
}

describe('bad input on every route', () => {
  it(`answers ${MIN_REQUESTS}+ generated requests without a 5xx, each rejection with a detail, no sentinel in any answer`, async () => {
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(fc.array(anyRequestArb(routes, targets), { minLength: BATCH, maxLength: BATCH }), async (reqs) => {
        const answers = await client.sendAll(reqs, 8);
        for (let i = 0; i < reqs.length; i++) {
          const r = reqs[i] as AimedReq;
          const res = answers[i] as RawRes;
          figures.requests++;
          figures.statuses.set(res.status, (figures.statuses.get(res.status) ?? 0) + 1);
          figures.kinds.set(r.kind, (figures.kinds.get(r.kind) ?? 0) + 1);
          const key = `${r.route.method.toUpperCase()} ${r.route.path}`;
          figures.perRoute.set(key, (figures.perRoute.get(key) ?? 0) + 1);
          const wrong = judge(r, res);
          if (wrong) {
            throw new Error(`${wrong} for ${describeReq(r)}\n→ ${res.status} ${res.text.slice(0, 500)}\nservice log: ${svc.stdout().slice(-2000)}`);
          }
        }
      }),
      // The failing request is reported as sent; shrinking batches of requests with side effects
      // (jobs, terminals) would take long and tell little more.
      { numRuns: RUNS, endOnFailure: true },
    );
    figures.ms = Date.now() - started;
    const statuses = Object.fromEntries([...figures.statuses].sort((a, b) => a[0] - b[0]));
    const fivexx = [...figures.statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    console.log(
      `bad-input: ${figures.requests} requests over ${figures.perRoute.size} routes in ${(figures.ms / 1000).toFixed(1)} s (${client.retried} resent after a closed keep-alive socket), ${fivexx} 5xx, statuses ${JSON.stringify(statuses)}, kinds ${JSON.stringify(Object.fromEntries(figures.kinds))}`,
    );
    expect(figures.requests).toBeGreaterThanOrEqual(MIN_REQUESTS);
    // Every declared route was aimed at.
    expect(figures.perRoute.size).toBe(routes.length);
    // Still serving afterwards.
    expect((await fetch(`${svc.url}/api/health`)).status).toBe(200);
  }, 240_000);

  it('opens no file outside the store and the state folder after start-up (strace)', async () => {
    expect(straceFile, 'strace is needed to watch file access (.ci/run installs it)').not.toBeNull();
    // The service stops first, so that the trace is complete.
    const [code] = await svc.stop();
    expect(code).toBe(0);
    const { accesses, children } = accessesAfter(straceFile as string, STARTUP_MARKER);
    // Besides the store and the state folder, the service may touch only: its own code (modules
    // loaded on first use, e.g. a charset decoder, with their package.json; the ops page's and
    // the docs viewer's files, read on first request), the programs it is
    // configured to start (checked before each start), the kernel's process and CPU tables
    // (process trees of terminals, metrics; a starting thread's cgroup limit and /dev/null), its spawn helper's socket, and, to resolve a path, the folders above these
    // (a stat, never an open), and its working folder's name (getcwd). Anything else is a request reaching a file it must not.
    // node_modules as the kernel names it: a worktree may link it from another checkout.
    const modules = fs.realpathSync(path.join(REPO_ROOT, 'node_modules'));
    const roots = [store, stateDir, REPO_ROOT.replace(/\/$/, ''), modules];
    const spawnHelperDir = new RegExp(`^${fs.realpathSync(os.tmpdir()).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/console-spawn-[A-Za-z0-9]{6}(/s)?$`);
    const classes: Record<string, (a: FileAccess) => boolean> = {
      store: (a) => within(a.path, store) || within(a.path, stateDir),
      // The ops page's files (src/ops-page, served as they are) are its own code too.
      code: (a) =>
        [path.join(REPO_ROOT, 'dist'), path.join(REPO_ROOT, 'node_modules'), modules, path.join(REPO_ROOT, 'package.json'), path.join(REPO_ROOT, 'src', 'ops-page')].some((d) => within(a.path, d)),
      // perl: the spawn helper looks for it as it starts (possibly after the service's), to start each job through it.
      programs: (a) => [DISPATCH, TTYD, process.execPath, ...PERL_PLACES].includes(a.path),
      // And what Node.js reads as a thread starts (a pool's worker started or replaced later): its cgroup's memory
      // limit and /dev/null.
      kernel: (a) => ['/proc', '/sys/devices/system/cpu', '/sys/fs/cgroup'].some((d) => within(a.path, d)) || a.path === '/dev/null',
      // The spawn helper's private socket directory (mkdtemp, mode 0700), removed at its exit.
      spawnHelper: (a) => spawnHelperDir.test(a.path),
      pathWalk: (a) => /stat|access/.test(a.call) && roots.some((r) => within(r, a.path)),
      // Its own working folder asked for (a worker thread started later, e.g. a pool's, asks as it starts): no file opened.
      workingFolder: (a) => a.call === 'getcwd' && a.path === process.cwd(),
    };
    const counts: Record<string, number> = Object.fromEntries(Object.keys(classes).map((c) => [c, 0]));
    const forbidden: string[] = [];
    for (const a of accesses) {
      const cls = Object.keys(classes).find((c) => (classes[c] as (a: FileAccess) => boolean)(a));
      if (cls) counts[cls] = (counts[cls] ?? 0) + 1;
      else forbidden.push(`${a.call} ${a.path}: ${a.line.slice(0, 300)}`);
    }
    console.log(`bad-input: strace saw ${accesses.length} file calls by the service after start-up (${children} child processes left out): ${JSON.stringify(counts)}, ${forbidden.length} elsewhere`);
    expect([...new Set(forbidden)]).toEqual([]);
    // The watch itself works: the service's reads of the store were seen.
    expect(counts.store).toBeGreaterThan(0);
    const trace = fs.readFileSync(straceFile as string, 'utf8');
    for (const name of [targets.outsideName, targets.insideName, targets.dotName]) expect(trace, name).not.toContain(name);
  });
});

describe('the body size limit (CONSOLE_MAX_BODY_BYTES)', () => {
  it('accepts a body of exactly the limit and answers 413 with a detail one byte past it; README documents both', async () => {
    const limit = 4096;
    const t = await startTestService({ store: 'empty', env: { CONSOLE_MAX_BODY_BYTES: String(limit) } });
    try {
      const body = (n: number) => {
        const base = JSON.stringify({ revision: 0, state: '' });
        return `${base.slice(0, -2)}${'x'.repeat(n - base.length)}"}`;
      };
      expect(Buffer.byteLength(body(limit))).toBe(limit);
      const ok = await fetch(`${t.url}/api/workspace-state/w1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: body(limit) });
      expect(ok.status).toBe(200);
      const over = await fetch(`${t.url}/api/workspace-state/w2`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: body(limit + 1) });
      expect(over.status).toBe(413);
      expect(((await over.json()) as { detail: string }).detail).toBe(`request body too large (limit ${limit} bytes)`);
      // Nothing was stored for the refused one.
      expect((await t.get('/api/workspace-state/w2')).status).toBe(404);
    } finally {
      await t.close();
    }
    const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).toMatch(/\| `CONSOLE_MAX_BODY_BYTES` \| `1048576` \| Request bodies above this answer 413\. \|/);
  });
});
