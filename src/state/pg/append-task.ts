/**
 * The event append thread of cluster mode (append-thread.ts): runs the bus's appends (`console_append`, then
 * retention) on a pool of its own, one at a time as the main thread sends them, and answers each with its ids or
 * its error (a fault of the database as its code, rebuilt as PgFaultError on the main thread).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { lowerOwnPriority, ownThreadId } from '../../process/own-thread.js';
import type { AppendReply, AppendRequest, AppendSetup } from './append-thread.js';
import { runAppend } from './event-repo.js';
import { PgFaultError } from './errors.js';
import { poolExec } from './exec.js';
import { pgPoolConfig } from './pg-state-store.js';

const setup = workerData as AppendSetup & { readonly port: MessagePort };
const port = setup.port;
const nice = lowerOwnPriority(setup.nice);
// One append at a time: one connection (replaced by the pool when it fails).
const pool = new pg.Pool(pgPoolConfig(setup.url, setup.connectTimeoutMs, setup.sessionBounds, 1, 'console-backend event appends'));
// An idle connection's failure (a server restart) is the next append's to find: unheard, it would end the thread.
pool.on('error', () => {});
const x = poolExec(pool);

port.postMessage({ seq: 0, tid: ownThreadId(), nice } satisfies AppendReply);

port.on('message', (m: AppendRequest) => {
  if ('close' in m) {
    void pool.end().finally(() => port.close());
    return;
  }
  if ('ping' in m) {
    port.postMessage({ pong: m.ping } satisfies AppendReply);
    return;
  }
  runAppend(x, x, setup.retention, m.columns, m.retryAfter).then(
    (ids) => port.postMessage({ seq: m.seq, ids } satisfies AppendReply),
    (err: unknown) => {
      const e = err as Error;
      const fault = err instanceof PgFaultError ? { code: err.code, pgCode: err.pgCode } : null;
      port.postMessage({ seq: m.seq, error: { message: e?.message ?? String(err), fault } } satisfies AppendReply);
    },
  );
});
