/**
 * The floor of P3 and P7: the bare pipeline the service's line path is made of, with no bus,
 * no database and no service around it. `POST /start?children=N&lines=L[&nice=K]` starts N
 * line printers (`<node> <tool> --project p3`, BENCH_LINES=L, both pipes captured, as the
 * supervisor starts them); each stdout goes through split2, and every line becomes the
 * Server-Sent Events frame the service would write for it (same JSON members, same id and
 * detail formats, a spawn event before and an exit event after each child), written to every
 * client of `GET /api/events/stream`. Frames are gathered per event-loop turn (at most 512 per
 * write) and written as one buffer shared by all clients: the best a bare server can do, and
 * what the service does too. Nothing waits for a slow client (the service's clients do not
 * either).
 *
 * P7 (the console under a generation storm) also reads from it: with BENCH_BYTES_FILE, the
 * service's answers to the console's reads are served from memory (bench/lib/answer-bytes),
 * and with `nice=K` the children start as the service starts jobs (src/process,
 * src/supervisor/job-priority): one per event-loop turn, each the leader of its own session,
 * its priority and its autogroup's lowered to K, and CONSOLE_JOB_ID set.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import split2 from 'split2';
import { loadAnswers } from '../lib/answer-bytes.js';

const tool = process.env.BENCH_TOOL as string;
const answers = loadAnswers(process.env.BENCH_BYTES_FILE);
const clients = new Set<http.ServerResponse>();
const BATCH = 512;
let nextId = 1;
let pending = '';
let pendingCount = 0;
let flushScheduled = false;
let lastMs = -1;
let lastTs = '';

function ts(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastTs = new Date(ms).toISOString();
  }
  return lastTs;
}

function flush(): void {
  flushScheduled = false;
  if (pendingCount === 0) return;
  const buf = Buffer.from(pending, 'utf8');
  pending = '';
  pendingCount = 0;
  for (const c of clients) c.write(buf);
}

function emit(severity: string, summary: string, detail: string | null, payload: string): void {
  const id = nextId++;
  const data = `{"id":"${id}","ts":"${ts()}","severity":"${severity}","scope":"engine/generation","summary":${JSON.stringify(summary)},"detail":${detail === null ? 'null' : JSON.stringify(detail)},"payload":${payload}}`;
  pending += `id: ${id}\ndata: ${data}\n\n`;
  if (++pendingCount >= BATCH) flush();
  else if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

const LINE_PAYLOAD = '{"source":"dispatch_cli"}';

/** Lowers a child's priority and, under autogroup scheduling, its session's, as the service does. */
function lower(pid: number, nice: number): void {
  try {
    os.setPriority(pid, nice);
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // Gone already, or no autogroups here: as the service, go on.
  }
}

function startChild(lines: number, nice: number | null): void {
  const proposalId = `gen_${randomBytes(6).toString('hex')}`;
  const child = spawn(process.execPath, [tool, '--project', 'p3'], {
    env: { ...process.env, BENCH_LINES: String(lines), CONSOLE_JOB_ID: proposalId },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: nice !== null,
  });
  if (nice !== null && child.pid !== undefined) lower(child.pid, nice);
  emit('info', `dispatch_cli spawned pid=${child.pid}`, null, JSON.stringify({ proposal_id: proposalId, argv: [process.execPath, tool, '--project', 'p3'] }));
  let n = 0;
  let e = 0;
  const out = child.stdout.pipe(split2()).on('data', (line: string) => emit('info', line, `${proposalId} stdout line ${++n}`, LINE_PAYLOAD));
  const err = child.stderr.pipe(split2()).on('data', (line: string) => emit('warning', line, `${proposalId} stderr line ${++e}`, LINE_PAYLOAD));
  const ended = (s: NodeJS.ReadableStream) => new Promise((r) => s.on('end', r));
  const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)));
  void Promise.all([exited, ended(out), ended(err)]).then(([rc]) => emit(rc === 0 ? 'success' : 'failure', `dispatch_cli exited rc=${rc}`, null, JSON.stringify({ proposal_id: proposalId, rc })));
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const answer = answers.get(req.url ?? '');
  if (answer) {
    res.writeHead(200, { 'Content-Type': answer.type, 'Content-Length': answer.body.length });
    res.end(answer.body);
  } else if (url.pathname === '/health') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"ok":true}');
  } else if (url.pathname === '/api/events/stream') {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no', Connection: 'keep-alive' });
    res.socket?.setNoDelay(true);
    res.write('retry: 2000\n\n');
    clients.add(res);
    res.on('close', () => clients.delete(res));
  } else if (url.pathname === '/start' && req.method === 'POST') {
    const n = Number(url.searchParams.get('children'));
    const lines = Number(url.searchParams.get('lines'));
    const niceParam = url.searchParams.get('nice');
    if (niceParam === null) {
      for (let i = 0; i < n; i++) startChild(lines, null);
    } else {
      // One spawn per turn, as the service's spawn pacer: reads are answered in between.
      let left = n;
      const next = () => {
        startChild(lines, Number(niceParam));
        if (--left > 0) setImmediate(next);
      };
      if (left > 0) setImmediate(next);
    }
    res.writeHead(202, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ started: n }));
  } else {
    res.writeHead(404);
    res.end();
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1');
