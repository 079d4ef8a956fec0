/** A running job's output as line events (service-spec.md §Events), drained before the exit event so it comes last. */
import type { Bus } from '../bus/bus.js';
import type { SweepReport } from '../process/index.js';
import type { OutputGate } from './output-gate.js';
import { jobOutcome, type JobOutcome } from './job-state.js';
import { LINE_PAYLOAD, LINE_SEVERITIES, lineDetail } from './line-event.js';
import { GENERATION_SCOPE, type RunningJob } from './running-job.js';

/** How a job's output is framed and how long a pipe held open after the exit is read. */
export interface OutputOptions {
  /** Bound on one line, bytes; longer lines are cut. */
  readonly lineMaxBytes: number;
  /** Ms after the exit (at least 1 s) past which silent open pipes are given up. */
  readonly killGraceMs: number;
}

/**
 * Publishes the job's lines (framed on the job I/O thread, job-io.ts) until its process ended,
 * its tree was swept and both pipes drained; counts them in the job's mirror for live reads (its
 * machine on the thread counts them too, and decides the end). @returns the sweep's
 * report and the end its machine decided after the last line (decided here from the mirror, without the
 * last stderr line, when the thread is gone: the service is ending); never rejects.
 * @throws Error at once when the lines come encoded and `bus` has no `publishEncoded` (a wiring bug).
 */
export function superviseOutput(bus: Bus, gate: OutputGate, job: RunningJob, options: OutputOptions): Promise<{ leftovers: SweepReport; end: JobOutcome }> {
  const max = options.lineMaxBytes;
  const encoded = job.output.encoded;
  // Set together in compose.ts: the thread encodes only for a bus that takes encoded lines.
  if (encoded && bus.publishEncoded === undefined) throw new Error('the job I/O thread encodes lines for a bus that cannot take them');
  job.output.read((stream, number, text, cut) => {
    if (job.fenced) return;
    if (stream === 0) job.stdoutLines++;
    else job.stderrLines++;
    // The machine's row for a running job's line (it ran on the thread for this line already).
    const severity = LINE_SEVERITIES[stream];
    if (encoded) {
      // The thread made the event's JSON but its id and time (line-event.ts lineTail): `text` is that.
      bus.publishEncoded?.(severity, GENERATION_SCOPE, text, job.proposalId, job.guard);
    } else {
      bus.publish({
        severity,
        scope: GENERATION_SCOPE,
        summary: text,
        detail: lineDetail(job.proposalId, stream, number, cut, max),
        payload: LINE_PAYLOAD,
        // The spec fixes the payload: the job is named for the proposalId filter only.
        proposalId: job.proposalId,
        // Stored only while the job is recorded running (fencing, cluster mode).
        guard: job.guard,
      });
    }
    gate.check();
  });
  // The job is its whole tree, swept after the exit: group members would hold its pipes open,
  // detached descendants would run on unwatched. Silent open pipes are given up after the grace.
  return job.proc.ended.then(async ({ exit, leftovers }) => {
    const end = await job.output.drain(Math.max(options.killGraceMs, 1000));
    return { leftovers, end: end ?? jobOutcome(job.status, exit.rc, exit.signal, job.stopReason, null, job.stdoutLines, job.stderrLines) };
  });
}
