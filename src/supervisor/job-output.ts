/** A running job's output as line events (service-spec.md §Events), drained before the exit event so it comes last. */
import type { Bus } from '../bus/bus.js';
import type { ExitFacts, SweepReport } from '../process/index.js';
import { untilDrained } from './drain-watch.js';
import { frameLines, framingMeter, type FramedLine, type LineTurns } from './frame-lines.js';
import type { OutputGate } from './output-gate.js';
import { transition } from './job-state.js';
import { GENERATION_SCOPE, type RunningJob } from './running-job.js';

/** Payload of every line event (service-spec.md §Events): one frozen object, so the bus reuses its JSON. */
const LINE_PAYLOAD = Object.freeze({ source: 'dispatch_cli' });

/** How a job's output is framed and how long a pipe held open after the exit is read. */
export interface OutputOptions {
  /** Bound on one line, bytes; longer lines are cut. */
  readonly lineMaxBytes: number;
  /** Ms after the exit (at least 1 s) past which silent open pipes are given up. */
  readonly killGraceMs: number;
}

/** Publishes the job's lines until its process ended and both pipes drained. @returns the exit facts and the sweep's report after the last line; never rejects. */
export function superviseOutput(bus: Bus, turns: LineTurns, gate: OutputGate, job: RunningJob, options: OutputOptions): Promise<{ exit: ExitFacts; leftovers: SweepReport }> {
  const max = options.lineMaxBytes;
  const onLine = (source: 'stdout' | 'stderr') => (line: FramedLine) => {
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
      // The spec fixes the payload: the job is named for the proposalId filter only.
      proposalId: job.proposalId,
      // Stored only while the job is recorded running (fencing, cluster mode).
      guard: job.guard,
    });
    gate.check();
  };
  const meters = [framingMeter(), framingMeter()] as const;
  const { stdout, stderr } = job.proc.output();
  const drained = Promise.all([frameLines(turns, stdout!, max, onLine('stdout'), gate, meters[0]), frameLines(turns, stderr!, max, onLine('stderr'), gate, meters[1])]);
  // The job is its whole tree, swept after the exit: group members would hold its pipes open,
  // detached descendants would run on unwatched.
  return job.proc.ended.then(async (ended) => {
    const busy = () => gate.held || meters[0].holding() || meters[1].holding();
    await untilDrained(
      drained,
      () => meters[0].bytes + meters[1].bytes,
      busy,
      Math.max(options.killGraceMs, 1000),
      () => {
        stdout?.destroy();
        stderr?.destroy();
      },
    );
    return ended;
  });
}
