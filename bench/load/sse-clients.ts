/**
 * SSE load clients (one process, many connections). Options as JSON in argv[2]:
 * {url, clients, expectExits?, expectFrames?, path?}. Prints `ready` once every stream has
 * its headers, then reads until each client has seen `expectExits` generation exit events (or
 * `expectFrames` frames), and prints a JSON result. Verification works on bytes (no JSON.parse per event): event ids must be
 * strictly increasing per client, and per job the stdout line numbers (from the event's
 * detail, `<proposal> stdout line <n>`) must run 1, 2, 3… with no gap or repeat.
 */
import http from 'node:http';

const opts = JSON.parse(process.argv[2] ?? '{}') as {
  url: string;
  clients: number;
  /** Done after this many generation exit events (service runs). */
  expectExits?: number;
  /** Done after this many frames, or when the server ends the stream (baseline runs). */
  expectFrames?: number;
  path?: string;
};
// Client 0 stops at the expected exits when given; the others (which do not look inside
// frames) at the expected number of frames. Without an expected frame count every client is full.
const isDone = (st: ClientState) => (st.full && opts.expectExits !== undefined ? st.exits >= opts.expectExits : opts.expectFrames !== undefined && st.frames >= opts.expectFrames);
const u = new URL(opts.url);
const ID = Buffer.from('id: ');
const LINE = Buffer.from(' stdout line ');
const EXIT = Buffer.from('dispatch_cli exited');
const SEP = Buffer.from('\n\n');

interface ClientState {
  full: boolean;
  hash: number;
  lastId: number;
  frames: number;
  lines: number;
  exits: number;
  errors: string[];
  nextLine: Map<string, number>;
  rest: Buffer;
  doneAt: number;
}

function digitsAt(buf: Buffer, at: number): [number, number] {
  let n = 0;
  let i = at;
  for (; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  return [n, i];
}

function scan(st: ClientState, chunk: Buffer): void {
  const buf = st.rest.length ? Buffer.concat([st.rest, chunk]) : chunk;
  let start = 0;
  for (;;) {
    const end = buf.indexOf(SEP, start);
    if (end === -1) break;
    if (buf[start] === 0x69 /* i */ && buf.indexOf(ID, start) === start) {
      const [id] = digitsAt(buf, start + 4);
      if (id <= st.lastId && st.errors.length < 10) st.errors.push(`id ${id} after ${st.lastId}`);
      st.lastId = id;
      st.frames++;
      st.hash = (Math.imul(st.hash, 31) + id) | 0;
      if (!st.full) {
        start = end + 2;
        continue;
      }
      const at = buf.indexOf(LINE, start);
      if (at !== -1 && at < end) {
        // The proposal id is the 16 bytes before " stdout line ".
        const job = buf.toString('latin1', at - 16, at);
        const [n] = digitsAt(buf, at + LINE.length);
        const want = st.nextLine.get(job) ?? 1;
        if (n !== want && st.errors.length < 10) st.errors.push(`${job} line ${n}, expected ${want}`);
        st.nextLine.set(job, n + 1);
        st.lines++;
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
  for (let c = 0; c < opts.clients; c++) {
    const st: ClientState = { full: c === 0 || opts.expectFrames === undefined, hash: 0, lastId: 0, frames: 0, lines: 0, exits: 0, errors: [], nextLine: new Map(), rest: Buffer.alloc(0), doneAt: 0 };
    states.push(st);
    const req = http.get({ host: u.hostname, port: u.port, path: opts.path ?? '/api/events/stream', agent: false }, (res) => {
      if (++ready === opts.clients) process.stdout.write('ready\n');
      res.on('data', (chunk: Buffer) => {
        scan(st, chunk);
        if (isDone(st) && st.doneAt === 0) {
          st.doneAt = Date.now();
          res.destroy();
          if (++done === opts.clients) resolve();
        }
      });
      res.on('close', () => {
        if (st.doneAt === 0) {
          if (!isDone(st)) st.errors.push(`stream closed early after ${st.frames} frames`);
          st.doneAt = Date.now();
          if (++done === opts.clients) resolve();
        }
      });
    });
    req.on('error', (e) => st.errors.push(String(e)));
  }
});
await finished;
process.stdout.write(
  `${JSON.stringify({
    doneAt: Math.max(...states.map((s) => s.doneAt)),
    lines: states.map((s) => s.lines),
    frames: states.map((s) => s.frames),
    hashes: states.map((s) => s.hash),
    exits: states.map((s) => s.exits),
    errors: states.flatMap((s) => s.errors).slice(0, 20),
  })}\n`,
);
