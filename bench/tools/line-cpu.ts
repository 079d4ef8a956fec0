/**
 * CPU per job line stored (bench/RESULTS.md, "lines encoded on the job I/O thread"): the service's
 * main thread and its whole process, per event stored, while `jobs` jobs each print `lines` lines as
 * fast as their pipes take them, with no stream client (what storing a line costs, apart from the
 * fan-out). Each build named runs in a service of its own, the builds alternating, `rounds` times:
 *
 *   node bench/.work/dist/tools/line-cpu.js [rounds=5] [jobs=4] [lines=200000] [entry…]
 *
 * An entry is a build's `dist/main/index.js` (default: this tree's). The job is the tests' tool
 * (`test/fixtures/rel-b-tool.mjs`, `burst:<lines>`: one write of every line). CPU comes from
 * /proc (clock ticks of 10 ms): the main thread's `task/<pid>/stat`, the process's `stat`, from
 * the first request to the moment no job runs. Prints a line per service and the medians per build.
 * BENCH_SERVICE_ENV (a JSON object of variables) is added to every service's environment, BENCH_NODE_ARGS
 * (space-separated) to its node's flags. With
 * BENCH_LINE_CPU_THREADS=1 each round also prints the CPU per event of each of the service's threads
 * that spent any (by name: the job I/O and event writer threads from the system status' tids, the
 * others by their kernel name), to see where a build's extra CPU goes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../lib/child.js';
import { REPO_ROOT } from '../lib/paths.js';
import { cpuPerUnit, cpuSeconds, cpuSplitText, threadCpu } from '../lib/threads.js';

const TOOL = path.join(REPO_ROOT, 'test', 'fixtures', 'rel-b-tool.mjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface SystemStatus {
  readonly jobs: { readonly running: number };
  readonly bus: { readonly lastEventId: string };
}

const status = async (url: string) => (await (await fetch(`${url}/api/system-status`)).json()) as SystemStatus;

interface Round {
  readonly events: number;
  /** Microseconds of CPU per event stored. */
  readonly mainUs: number;
  readonly processUs: number;
  readonly wallS: number;
}

/** One service of `entry` on an empty store: `jobs` bursts at once, measured until none runs. */
async function measure(entry: string, jobs: number, lines: number): Promise<Round> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'line-cpu-'));
  fs.mkdirSync(path.join(tmp, 'store', 'projects'), { recursive: true });
  fs.mkdirSync(path.join(tmp, 'state'));
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    CONSOLE_DATA_DIR: path.join(tmp, 'store'),
    CONSOLE_STATE_DIR: path.join(tmp, 'state'),
    DISPATCH_CLI: TOOL,
    CONSOLE_WORKER_THREADS: '1',
    CONSOLE_EVENT_RETENTION: String(jobs * lines * 2),
    // As the rows take it (bench/lib/child.ts): variables of an experiment, as a JSON object.
    ...(JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>),
  };
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, entry], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode} at start-up`);
      const up = await fetch(`${url}/api/health`).catch(() => null);
      if (up?.ok) break;
      await sleep(50);
    }
    const pid = child.pid as number;
    const main0 = cpuSeconds(`/proc/${pid}/task/${pid}/stat`);
    const all0 = cpuSeconds(`/proc/${pid}/stat`);
    const first = await status(url);
    const head0 = Number(first.bus.lastEventId);
    const threads0 = await threadCpu(pid, url);
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: jobs }, async () => {
        const r = await fetch(`${url}/api/proposals/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ project: 'bench', model: `burst:${lines}` }),
        });
        if (r.status !== 202) throw new Error(`generate: ${r.status} ${await r.text()}`);
      }),
    );
    // The exit event is stored after the job's last line: no job running, every line stored.
    while ((await status(url)).jobs.running > 0) await sleep(20);
    const main1 = cpuSeconds(`/proc/${pid}/task/${pid}/stat`);
    const all1 = cpuSeconds(`/proc/${pid}/stat`);
    const wallS = (Date.now() - t0) / 1000;
    const events = Number((await status(url)).bus.lastEventId) - head0;
    if (process.env.BENCH_LINE_CPU_THREADS === '1') console.log(`  threads: ${cpuSplitText(cpuPerUnit(threads0, await threadCpu(pid, url), events))} µs/event`);
    return { events, mainUs: ((main1 - main0) / events) * 1e6, processUs: ((all1 - all0) / events) * 1e6, wallS };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const [rounds = '5', jobs = '4', lines = '200000', ...named] = process.argv.slice(2);
  const entries = named.length > 0 ? named : [path.join(REPO_ROOT, 'dist', 'main', 'index.js')];
  const results: Round[][] = entries.map(() => []);
  for (let r = 1; r <= Number(rounds); r++) {
    for (const [i, entry] of entries.entries()) {
      const x = await measure(entry, Number(jobs), Number(lines));
      results[i]?.push(x);
      console.log(`round ${r} ${entry}: ${x.events} events, main thread ${x.mainUs.toFixed(2)} µs/event, process ${x.processUs.toFixed(2)} µs/event, ${x.wallS.toFixed(2)} s`);
    }
  }
  for (const [i, entry] of entries.entries()) {
    const rs = results[i] ?? [];
    console.log(
      `median ${entry}: main thread ${median(rs.map((x) => x.mainUs)).toFixed(2)} µs/event, process ${median(rs.map((x) => x.processUs)).toFixed(2)} µs/event, ${median(rs.map((x) => x.wallS)).toFixed(2)} s`,
    );
  }
}

await main();
