/**
 * Graceful shutdown (spec: What the service does; README, "Shutdown"), in order:
 * 1. stop accepting: new connections are refused, requests on open ones get a 503;
 * 2. end the event streams;
 * 3. kill every job's and terminal's process tree and publish the exits, while the requests in
 *    flight finish (at most the kill grace);
 * 4. close the connections (only now: see shutdown-gate.ts), the workers, the membership, the
 *    bus and the database, then the housekeeping thread.
 */
import { once } from 'node:events';
import { stopListening } from '../http/shutdown-gate.js';
import type { Parts } from './compose.js';
import type { HttpParts } from './http-server.js';

/** Stops the instance; resolves when everything is closed. Never rejects for a part that would not close in time: it is logged. */
export async function shutdown(parts: Parts, web: HttpParts): Promise<void> {
  const { log, config, server } = { ...parts, server: web.server };
  log.info('shutting down');
  const serverClosed = once(server, 'close');
  web.gate.close();
  stopListening(server);
  parts.sse.closeAll();
  const [, , unfinished] = await Promise.all([parts.supervisor.stopAll(), parts.terminals.stopAll(), web.gate.drained(config.jobs.killGraceMs)]);
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
  // After the jobs and terminals ended (their sweeps are done) and the last checkpoint.
  await parts.housekeeping.close();
  parts.history.stop();
  parts.metrics.close();
  web.app.recorder?.close();
  log.info('stopped');
}
