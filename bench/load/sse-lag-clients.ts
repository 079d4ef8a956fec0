/**
 * Stream clients of P7 (one process, many connections): like sse-clients, but every client
 * looks inside every frame, and measures each line's delivery lag. Options as JSON in argv[2]:
 * {url, clients, expectExits, path?}. Prints `ready` once every stream has its headers, then
 * reads until each client has seen `expectExits` generation exit events, and prints a JSON
 * result.
 *
 * - Lag: a line printed by bench/tools/stamp-printer carries the wall-clock time of its write
 *   (`line <n> <t ms> …`); on arrival of a chunk, each of its lines' lag is
 *   `performance.timeOrigin + performance.now() - t` (both clocks are the system's wall clock:
 *   comparable across processes). Lags go into one histogram for all clients (0.1 ms buckets
 *   below 100 ms, 1 ms above), plus the largest lag of each 500 ms window, to show whether the
 *   lag settles (bounded) or keeps growing.
 * - Correctness, per client: event ids strictly increase; per job, the service's line numbers
 *   (`<proposal> stdout line <n>` in the detail) run 1, 2, 3… and match the tool's own
 *   (`line <n>` in the summary), so nothing is lost, repeated or reordered.
 * - A stream the service closes (a client that fell too far behind is disconnected) is
 *   reopened with `Last-Event-ID`, as EventSource does: the replay must continue the sequence
 *   with no gap and no duplicate. Reconnections are counted.
 */
import http from 'node:http';
import { wallAt } from '../lib/wall-clock.js';

const opts = JSON.parse(process.argv[2] ?? '{}') as { url: string; clients: number; expectExits: number; path?: string };
const u = new URL(opts.url);
const ID = Buffer.from('id: ');
const LINE = Buffer.from(' stdout line ');
const SUMMARY = Buffer.from('"summary":"line ');
const EXIT = Buffer.from('dispatch_cli exited');
const SEP = Buffer.from('\n\n');

/** Histograms: 0.1 ms buckets up to 100 ms, then 1 ms buckets up to 600 s. */
const FINE = 1000;
const newHist = () => new Uint32Array(FINE + 600_000);
const hist = newHist();
/** Client 0 only: the lag up to the event's publication (its `ts`), and from there to arrival. */
const toPublish = newHist();
const fromPublish = newHist();
let negative = 0;
let lagMax = 0;
const WINDOW_MS = 500;
const windows = new Map<number, number>();
const origin = wallAt(0); // not performance.timeOrigin: see bench/lib/wall-clock
const started = origin + performance.now();

function bucket(h: Uint32Array, lag: number): void {
  const b = lag < 0 ? 0 : lag < 100 ? Math.floor(lag * 10) : Math.min(h.length - 1, FINE + Math.floor(lag - 100));
  h[b] = (h[b] as number) + 1;
}

function record(lag: number, now: number): void {
  if (lag < 0) {
    negative++;
    lag = 0;
  }
  if (lag > lagMax) lagMax = lag;
  const b = lag < 100 ? Math.floor(lag * 10) : Math.min(hist.length - 1, FINE + Math.floor(lag - 100));
  hist[b] = (hist[b] as number) + 1;
  const w = Math.floor((now - started) / WINDOW_MS);
  if ((windows.get(w) ?? -1) < lag) windows.set(w, lag);
}

function quantile(q: number, h: Uint32Array = hist): number {
  let total = 0;
  for (const c of h) total += c;
  if (total === 0) return NaN;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let b = 0; b < h.length; b++) {
    seen += h[b] as number;
    if (seen >= rank) return b < FINE ? (b + 1) / 10 : b - FINE + 101;
  }
  return NaN;
}

interface ClientState {
  /** Client 0 also splits each lag at the event's publication. */
  split: boolean;
  lastId: number;
  frames: number;
  lines: number;
  exits: number;
  reconnects: number;
  errors: string[];
  /** Next expected line number, by job. */
  nextLine: Map<string, number>;
  rest: Buffer;
  doneAt: number;
  hash: number;
}

/** A non-negative decimal number (digits, optional fraction) at `at`; returns [value, end]. */
function numberAt(buf: Buffer, at: number): [number, number] {
  let n = 0;
  let i = at;
  for (; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  if (buf[i] === 0x2e /* . */) {
    let scale = 0.1;
    for (i++; i < buf.length; i++) {
      const c = buf[i] as number;
      if (c < 48 || c > 57) break;
      n += (c - 48) * scale;
      scale /= 10;
    }
  }
  return [n, i];
}

const TS = Buffer.from('"ts":"');

/** The event's `ts` (`"ts":"YYYY-MM-DDTHH:MM:SS.mmmZ"`) as ms since midnight UTC, or null. */
function publishedAt(buf: Buffer, start: number, end: number): number | null {
  const at = buf.indexOf(TS, start);
  if (at === -1 || at > end) return null;
  const t = at + TS.length + 11; // after the date and 'T'
  const d = (i: number) => (buf[t + i] as number) - 48;
  const h = d(0) * 10 + d(1);
  const m = d(3) * 10 + d(4);
  const sec = d(6) * 10 + d(7);
  const ms = d(9) * 100 + d(10) * 10 + d(11);
  return ((h * 60 + m) * 60 + sec) * 1000 + ms;
}

function scan(st: ClientState, chunk: Buffer): void {
  const now = origin + performance.now();
  const buf = st.rest.length ? Buffer.concat([st.rest, chunk]) : chunk;
  let start = 0;
  for (;;) {
    const end = buf.indexOf(SEP, start);
    if (end === -1) break;
    if (buf[start] === 0x69 /* i */ && buf.indexOf(ID, start) === start) {
      const [id] = numberAt(buf, start + 4);
      if (id <= st.lastId && st.errors.length < 10) st.errors.push(`id ${id} after ${st.lastId}`);
      st.lastId = id;
      st.frames++;
      st.hash = (Math.imul(st.hash, 31) + id) | 0;
      const at = buf.indexOf(LINE, start);
      if (at !== -1 && at < end) {
        // The proposal id is the 16 bytes before " stdout line ".
        const job = buf.toString('latin1', at - 16, at);
        const [n] = numberAt(buf, at + LINE.length);
        const want = st.nextLine.get(job) ?? 1;
        if (n !== want && st.errors.length < 10) st.errors.push(`${job} line ${n}, expected ${want}`);
        st.nextLine.set(job, n + 1);
        st.lines++;
        const s = buf.indexOf(SUMMARY, start);
        if (s !== -1 && s < end) {
          const [own, after] = numberAt(buf, s + SUMMARY.length);
          if (own !== n && st.errors.length < 10) st.errors.push(`${job} line ${n} carries the tool's line ${own}`);
          const [stamp] = numberAt(buf, after + 1);
          record(now - stamp, now);
          if (st.split) {
            const published = publishedAt(buf, start, end);
            if (published !== null) {
              // Time of day only (the event's ts has ms resolution): a day's rollover wraps.
              const day = 86_400_000;
              const stampOfDay = stamp % day;
              bucket(toPublish, ((published - stampOfDay + day + day / 2) % day) - day / 2);
              bucket(fromPublish, (((now % day) - published + day + day / 2) % day) - day / 2);
            }
          }
        }
      } else {
        const ex = buf.indexOf(EXIT, start);
        if (ex !== -1 && ex < end) st.exits++;
      }
    }
    start = end + 2;
  }
  st.rest = Buffer.from(buf.subarray(start));
}

const states: ClientState[] = [];
let ready = 0;
let done = 0;
const finished = new Promise<void>((resolve) => {
  const connect = (st: ClientState, first: boolean) => {
    const headers: Record<string, string> = st.lastId > 0 ? { 'Last-Event-ID': String(st.lastId) } : {};
    const req = http.get({ host: u.hostname, port: u.port, path: opts.path ?? '/api/events/stream', agent: false, headers }, (res) => {
      if (first && ++ready === opts.clients) process.stdout.write('ready\n');
      res.on('data', (chunk: Buffer) => {
        scan(st, chunk);
        if (st.exits >= opts.expectExits && st.doneAt === 0) {
          st.doneAt = Date.now();
          res.destroy();
          if (++done === opts.clients) resolve();
        }
      });
      res.on('close', () => {
        if (st.doneAt !== 0) return;
        // Closed by the service (too far behind): resume where this client stopped.
        st.reconnects++;
        st.rest = Buffer.alloc(0);
        if (st.reconnects > 1000) {
          st.errors.push('more than 1000 reconnections');
          st.doneAt = Date.now();
          if (++done === opts.clients) resolve();
          return;
        }
        setTimeout(() => connect(st, false), 50);
      });
    });
    req.on('error', (e) => {
      if (st.errors.length < 10) st.errors.push(String(e));
    });
  };
  for (let c = 0; c < opts.clients; c++) {
    const st: ClientState = { split: c === 0, lastId: 0, frames: 0, lines: 0, exits: 0, reconnects: 0, errors: [], nextLine: new Map(), rest: Buffer.alloc(0), doneAt: 0, hash: 0 };
    states.push(st);
    connect(st, true);
  }
});
await finished;
const first = states[0] as ClientState;
process.stdout.write(
  `${JSON.stringify({
    doneAt: Math.max(...states.map((s) => s.doneAt)),
    lines: states.map((s) => s.lines),
    frames: states.map((s) => s.frames),
    hashes: states.map((s) => s.hash),
    exits: states.map((s) => s.exits),
    reconnects: states.map((s) => s.reconnects),
    /** Lines seen per job by client 0 (the others are compared with it by hash). */
    perJob: Object.fromEntries([...first.nextLine].map(([job, next]) => [job, next - 1])),
    lag: { p50: quantile(0.5), p99: quantile(0.99), max: lagMax, negative },
    /**
     * Client 0's lags split at the event's publication (`ts`, ms resolution): p99 of the part in
     * the pipe and the supervisor, and of the part in the bus, the sockets and the client.
     */
    split: { toPublishP99: quantile(0.99, toPublish), fromPublishP99: quantile(0.99, fromPublish) },
    /** Largest lag of each 500 ms window since the clients started, in order. */
    lagWindows: [...windows.entries()].sort((a, b) => a[0] - b[0]).map(([w, lag]) => [w * WINDOW_MS, Math.round(lag)]),
    errors: states.flatMap((s) => s.errors).slice(0, 20),
  })}\n`,
);
