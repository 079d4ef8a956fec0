/**
 * Graceful shutdown (README, "Shutdown"): stop accepting (503 on open connections), end the streams once what was
 * published is delivered, kill job and terminal trees meanwhile and while requests in flight finish, then close
 * connections (only now: see shutdown-gate.ts), workers, membership, bus, database, the housekeeping thread and last
 * the job I/O thread (and its spawn helper).
 */
import { once } from 'node:events';
import { stopListening } from '../http/shutdown-gate.js';
import type { Parts } from './compose.js';
import type { HttpParts } from './http-server.js';

/** The streams' final flush waits at least this long (ms), even with CONSOLE_KILL_GRACE_MS at 0. */
const STREAMS_FLUSH_MIN_MS = 1000;

/** Stops the instance; resolves when everything is closed. Never rejects for a part that would not close in time: it is logged. */
export async function shutdown(parts: Parts, web: HttpParts): Promise<void> {
  const { log, config, server } = { ...parts, server: web.server };
  log.info('shutting down');
  const serverClosed = once(server, 'close');
  web.gate.close();
  stopListening(server);
  // The streams end once what was published before is stored and delivered (bounded, as the requests' drain: a writer
  // thread that hangs is not waited for here); the jobs are stopped meanwhile.
  const streamsBound = Math.max(STREAMS_FLUSH_MIN_MS, config.jobs.killGraceMs);
  const [storedInTime, , , unfinished] = await Promise.all([parts.sse.closeAll(streamsBound), parts.supervisor.stopAll(), parts.terminals.stopAll(), web.gate.drained(config.jobs.killGraceMs)]);
  if (!storedInTime) log.warn({ boundMs: streamsBound, queued: parts.backend.bus.backlog }, 'streams ended before the queued events were stored');
  if (unfinished > 0) log.warn({ unfinished }, 'requests still unanswered at shutdown');
  server.closeAllConnections();
  server.close();
  await serverClosed;
  parts.cluster?.stop();
  parts.store.close();
  // A worker stuck in a system call cannot be stopped: the wait for it is bounded.
  if (!(await parts.pool.close(config.jobs.killGraceMs))) log.warn('worker threads still busy at shutdown');
  await parts.membership?.stop();
  await parts.backend.bus.close();
  await parts.backend.close();
  // After the last checkpoint, and after the jobs' and terminals' sweeps that run on it.
  await parts.housekeeping.close();
  // Last: every job's exit and line came through it.
  await parts.jobIo.close();
  parts.history.stop();
  parts.metrics.close();
  web.app.recorder?.close();
  log.info('stopped');
}
