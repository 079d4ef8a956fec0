/**
 * The job I/O thread (README, "Threads"): forks every job through the spawn helper, owns the
 * jobs' stdout and stderr connections, frames their lines and posts them to the main thread in
 * batches, at most WINDOW_LINES lines unacknowledged, so a slow bus stops the reads and the children
 * block in their writes. Each job's state machine runs here (job-state.ts JobMachine): its lines
 * counted, the first stop request kept, its end decided once its pipes drained and told with
 * `drained`. It runs at its own nice value, below the main thread's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type net from 'node:net';
import type { ProcessSpawnError } from '../process/errors.js';
import { exitFactsOf } from '../process/exit-facts.js';
import { SpawnHelper } from '../process/spawn-helper.js';
import { lowerOwnPriority, ownThreadId } from '../process/own-thread.js';
import { untilDrained } from './drain-watch.js';
import { frameLines, framingMeter, LineTurns, TURN_CHARS, TURN_LINES, type FramedLine, type FramingMeter } from './frame-lines.js';
import { BATCH_LINES, BATCH_WAIT_MS, WINDOW_LINES, type FromJobIo, type JobIoSetup, type LineBatch, type ToJobIo } from './job-io-protocol.js';
import { LineEncoder } from './line-event.js';
import { SpawnPacer } from './spawn-pacer.js';
import { JobMachine, type JobOutcome } from './job-state.js';
import type { LineHold } from './output-gate.js';

const port = parentPort;
if (port === null) throw new Error('job-io-main.js runs as a worker thread');
const setup = workerData as JobIoSetup;
const post = (m: FromJobIo): void => port.postMessage(m);

/** Reading stops while the main thread holds (the bus is behind) or the window is full. */
class Window implements LineHold {
  /** Lines posted and not acknowledged. */
  inFlight = 0;
  busHeld = false;
  private readonly waiting: (() => void)[] = [];

  get held(): boolean {
    return this.busHeld || this.inFlight >= WINDOW_LINES;
  }

  whenReleased(resume: () => void): void {
    this.waiting.push(resume);
  }

  /** Resumes the waiting streams, in the order they stopped, once nothing holds. */
  maybeRelease(): void {
    if (this.held) return;
    for (const resume of this.waiting.splice(0)) resume();
  }
}

const window = new Window();
// Half the main thread's turn: turns here are short (no storing), so streams alternate in runs
// short enough to keep one job's flood from delaying another's lines.
const turns = new LineTurns(TURN_LINES / 2, TURN_CHARS / 2);
let batch = emptyBatch();
/** The batch's texts, joined into its `text` when it is posted. */
let texts: string[] = [];
let textEnd = 0;
let flushTimer: NodeJS.Timeout | null = null;

function emptyBatch(): Omit<LineBatch, 'text'> {
  return { kind: 'lines', keys: [], streams: [], numbers: [], ends: [], cut: [] };
}

function addText(text: string): void {
  texts.push(text);
  textEnd += text.length;
  batch.ends.push(textEnd);
}

function flush(): void {
  if (flushTimer !== null) {
    clearTimeout(flushTimer);
    flushTimer = null;
  }
  if (batch.keys.length === 0) return;
  const out: LineBatch = { ...batch, text: texts.join('') };
  batch = emptyBatch();
  texts = [];
  textEnd = 0;
  window.inFlight += out.keys.length;
  post(out);
}

function push(key: number, job: Job, stream: 0 | 1, line: FramedLine): void {
  const b = batch;
  if (line.cut) b.cut.push(b.keys.length);
  b.keys.push(key);
  b.streams.push(stream);
  b.numbers.push(line.number);
  // The event's JSON but its id and time, encoded here rather than on the main thread.
  addText(job.encoder !== null ? job.encoder.tail(stream, line.number, line.text, line.cut) : line.text);
  // The machine keeps the last stderr line here: the main thread's copy would be a slice holding its whole batch.
  job.machine.line(stream, line.text);
  if (b.keys.length >= BATCH_LINES) flush();
  // Lines that trickle in wait a little for company: a message per line (each a wake-up and an
  // acknowledgement of the main thread) cost it more than the lines themselves.
  else if (flushTimer === null) flushTimer = setTimeout(flush, BATCH_WAIT_MS);
}

/** One job's streams, as the helper connected them. */
interface Job {
  readonly stdout: net.Socket | null;
  readonly stderr: net.Socket | null;
  readonly meters: readonly [FramingMeter, FramingMeter];
  readonly lineMaxBytes: number;
  /** Its lines' events' JSON, with `encode` (null: texts cross). */
  readonly encoder: LineEncoder | null;
  /** Both streams framed to their end (set by `read`). */
  framed: Promise<void> | null;
  /** Its state machine: lines, stop request, end. */
  readonly machine: JobMachine;
  /** Its exit, as Node reports it. */
  readonly exit: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
}

const jobs = new Map<number, Job>();

/** Spawn orders go to the helper one per turn, each after the last job was reported (lowered already) or its bound. */
const pacer = new SpawnPacer();
// Forked before this thread lowers its priority: the helper, and so every job, keeps the service's.
const helper = new SpawnHelper(setup.helperFile, (err) => post({ kind: 'helper-death', message: err.message }));
const nice = lowerOwnPriority(setup.nice);
post({ kind: 'ready', helperPid: helper.pid ?? null, tid: ownThreadId(), nice });
void helper.whenReady().then((sessions) => {
  if (sessions !== null) post({ kind: 'helper-ready', sessions });
});

port.on('message', (m: ToJobIo) => {
  switch (m.kind) {
    case 'spawn':
      void spawn(m);
      return;
    case 'read':
      read(m.key);
      return;
    case 'drain':
      void drain(m.key, m.idleMs);
      return;
    case 'stop':
      // After its end (the stop crossed the drained report) there is nothing to keep.
      jobs.get(m.key)?.machine.stop(m.reason);
      return;
    case 'discard':
      discard(m.key);
      return;
    case 'ack':
      window.inFlight -= m.lines;
      window.maybeRelease();
      return;
    case 'hold':
      window.busHeld = m.held;
      window.maybeRelease();
      return;
    case 'ping':
      post({ kind: 'pong', seq: m.seq });
      return;
    case 'close':
      void helper.close().then(() => {
        post({ kind: 'closed' });
        port.close();
      });
      return;
    default:
      // A message this thread does not know is a bug on the other side: fail loudly.
      throw new Error(`job I/O thread: unknown message ${JSON.stringify(m)}`);
  }
});

async function spawn(m: Extract<ToJobIo, { kind: 'spawn' }>): Promise<void> {
  const done = await pacer.turn();
  try {
    const child = await helper.spawn({ file: m.file, args: m.args, cwd: m.cwd, env: m.env, stdout: true, stderr: true, nice: m.nice });
    const machine = new JobMachine();
    jobs.set(m.key, {
      stdout: child.stdout,
      stderr: child.stderr,
      meters: [framingMeter(), framingMeter()],
      lineMaxBytes: m.lineMaxBytes,
      encoder: setup.encode ? new LineEncoder(m.proposalId, m.lineMaxBytes) : null,
      framed: null,
      machine,
      exit: child.exit,
    });
    post({ kind: 'spawned', key: m.key, pid: child.pid, startTime: child.startTime, lowered: child.lowered, severity: machine.accepted });
    void child.exit.then(({ code, signal }) => post({ kind: 'exit', key: m.key, code, signal }));
  } catch (err) {
    // ProcessSpawnError: the refusal's own error (its errno) is its cause.
    const refusal = err as ProcessSpawnError;
    const cause = refusal.cause as NodeJS.ErrnoException | undefined;
    post({ kind: 'refused', key: m.key, code: refusal.errno ?? null, message: cause?.message ?? refusal.message });
  } finally {
    done();
  }
}

function read(key: number): void {
  const job = jobs.get(key);
  if (job === undefined || job.framed !== null) return;
  const max = job.lineMaxBytes;
  const streams = [job.stdout, job.stderr] as const;
  job.framed = Promise.all(streams.map((s, i) => (s === null ? null : frameLines(turns, s, max, (line) => push(key, job, i as 0 | 1, line), window, job.meters[i as 0 | 1])))).then(() => {});
}

async function drain(key: number, idleMs: number): Promise<void> {
  const job = jobs.get(key);
  if (job !== undefined && job.framed === null) discard(key);
  else if (job !== undefined && job.framed !== null) {
    const [a, b] = job.meters;
    await untilDrained(
      job.framed,
      () => a.bytes + b.bytes,
      () => window.held || a.holding() || b.holding(),
      idleMs,
      () => {
        job.stdout?.destroy();
        job.stderr?.destroy();
      },
    );
  }
  let end: JobOutcome | null = null;
  if (job !== undefined) {
    // Asked for after the exit (and the sweep): settled already.
    const { code, signal } = await job.exit;
    const { rc } = exitFactsOf(code, signal);
    end = job.machine.end(rc, signal);
  }
  jobs.delete(key);
  flush();
  post({ kind: 'drained', key, end });
}

function discard(key: number): void {
  const job = jobs.get(key);
  if (job === undefined) return;
  jobs.delete(key);
  job.stdout?.destroy();
  job.stderr?.destroy();
}
