/**
 * The floor of P2 loop: the same generation requests answered `202` with each job's pid, each job
 * (BENCH_TOOL, the same tiny tool) forked by a helper process over an IPC channel, as the service's
 * spawn helper forks them: each the leader of its own session, its priority and its autogroup's
 * lowered to BENCH_JOB_NICE, its output read to the end. Nothing else: no Express, no validation,
 * no bus, no database, no job I/O thread. Its main thread's event-loop delay (bench/tools/
 * loop-monitor, preloaded) during a burst of requests is what the burst and the jobs' starts cost a
 * main thread that forks nothing: the least the service can reach on this machine.
 * `GET /api/system-status` answers `{"jobs":{"running":N}}` (jobs started and not exited yet).
 * Run with `--helper` (and an IPC channel) it is the helper.
 */
import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';

type ToHelper = { key: number };
type FromHelper = { kind: 'spawned'; key: number; pid: number } | { kind: 'exited' };

if (process.argv[2] === '--helper') {
  const tool = process.env.BENCH_TOOL as string;
  const nice = Number(process.env.BENCH_JOB_NICE ?? 19);
  process.on('message', (m: ToHelper) => {
    const child = spawn(process.execPath, [tool, '--project', 'p2'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const pid = child.pid ?? 0;
    try {
      os.setPriority(pid, nice);
      fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
    } catch {
      // Gone already, or no autogroups here: as the service, go on.
    }
    child.stdout.resume();
    child.stderr.resume();
    child.on('close', () => process.send?.({ kind: 'exited' } satisfies FromHelper));
    process.send?.({ kind: 'spawned', key: m.key, pid } satisfies FromHelper);
  });
  process.on('disconnect', () => process.exit(0));
} else {
  const helper = fork(process.argv[1] as string, ['--helper'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const waiting = new Map<number, (pid: number) => void>();
  let nextKey = 1;
  let running = 0;
  helper.on('message', (m: FromHelper) => {
    if (m.kind === 'exited') {
      running--;
      return;
    }
    waiting.get(m.key)?.(m.pid);
    waiting.delete(m.key);
  });
  const server = http.createServer((req, res) => {
    if (req.url === '/health') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
    } else if (req.url === '/api/system-status') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jobs: { running } }));
    } else if (req.url === '/api/proposals/generate' && req.method === 'POST') {
      req.resume();
      req.on('end', () => {
        const key = nextKey++;
        running++;
        waiting.set(key, (pid) => res.writeHead(202, { 'Content-Type': 'application/json' }).end(JSON.stringify({ proposalId: `gen_floor_${key}`, pid })));
        helper.send({ key } satisfies ToHelper);
      });
    } else {
      res.writeHead(404).end();
    }
  });
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => {
    helper.disconnect();
    server.close();
    process.exit(0);
  });
}
