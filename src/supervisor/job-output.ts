/**
 * A running job's output (spec: Events, one event per output line): both pipes framed into
 * line events on the bus, and the wait for them to drain after the exit, so a job's exit
 * event always follows its last line event.
 */
import type { Bus } from '../bus/bus.js';
import type { ExitFacts, SweepReport } from '../process/index.js';
import { untilDrained } from './drain-watch.js';
import { frameLines, framingMeter, type FramedLine, type LineTurns } from './frame-lines.js';
import type { OutputGate } from './output-gate.js';
import { transition } from './job-state.js';
import { GENERATION_SCOPE, type RunningJob } from './running-job.js';

/** Payload of every line event (spec: Events): one frozen object, so the bus reuses its JSON. */
const LINE_PAYLOAD = Object.freeze({ source: 'dispatch_cli' });

/** How a job's output is framed and how long a pipe held open after the exit is read. */
export interface OutputOptions {
  /** Bound on one line, bytes; longer lines are cut with a note in the detail. */
  readonly lineMaxBytes: number;
  /** After the exit, pipes still open this long (at least 1 s) are no longer read, ms. */
  readonly killGraceMs: number;
}

/**
 * Publishes the job's stdout and stderr lines (counting them on `job`) until its process has
 * ended and both pipes are drained; while `gate` is held (the bus is behind), no line is read,
 * so the child blocks on its own writes (backpressure, issue 12).
 * @returns the exit facts and the leftover sweep's report, once the last line is published;
 *   never rejects.
 */
export function superviseOutput(bus: Bus, turns: LineTurns, gate: OutputGate, job: RunningJob, options: OutputOptions): Promise<{ exit: ExitFacts; leftovers: SweepReport }> {
  const { child } = job.proc;
  const max = options.lineMaxBytes;
  const onLine = (source: 'stdout' | 'stderr') => (line: FramedLine) => {
    // Another instance marked the job lost: its tree is being killed; nothing more is published.
    if (job.fenced) return;
    if (source === 'stdout') job.stdoutLines++;
    else {
      job.stderrLines++;
      job.lastStderr = line.text;
    }
    const { severity } = transition(job.status, { kind: source === 'stdout' ? 'stdout-line' : 'stderr-line' });
    bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: line.text,
      detail: `${job.proposalId} ${source} line ${line.number}${line.cut ? ` (cut at ${max} bytes)` : ''}`,
      payload: LINE_PAYLOAD,
      // The payload is fixed by the spec: the job is named for the proposalId filter (not served).
      proposalId: job.proposalId,
      // Stored only while the job is recorded running (fencing, cluster mode).
      guard: job.guard,
    });
    gate.check();
  };
  const meters = [framingMeter(), framingMeter()] as const;
  const drained = Promise.all([
    frameLines(turns, child.stdout!, max, onLine('stdout'), gate, meters[0]),
    frameLines(turns, child.stderr!, max, onLine('stderr'), gate, meters[1]),
  ]);
  // The job is its whole process tree: what outlives the tool ends with it (the managed
  // process sweeps it after the exit, until none is left). Members of its group would hold
  // its pipes open; descendants it started elsewhere (daemons, sessions of their own) would
  // run on, unwatched, forever.
  return job.proc.ended.then(async (ended) => {
    // Read to the end while lines come; a process outside the tree that still holds a pipe
    // and writes nothing is given up after the grace (drain-watch.ts).
    const busy = () => gate.held || meters[0].holding() || meters[1].holding();
    await untilDrained(drained, () => meters[0].bytes + meters[1].bytes, busy, Math.max(options.killGraceMs, 1000), () => {
      child.stdout?.destroy();
      child.stderr?.destroy();
    });
    return ended;
  });
}
