/**
 * The event append thread of cluster mode (append-thread.ts): runs the bus's appends (`console_append`, then
 * retention) on a pool of its own, in the order the main thread sends them, each only once the one before it
 * succeeded, and answers each with its ids or its error (a fault of the database as its code, rebuilt as PgFaultError
 * on the main thread). The main thread may send the next append while one runs (it waits here, not for a round trip
 * through the main thread); once one fails, those sent before the main thread heard of it (its `epoch` not above
 * the failed one's) are refused unrun (`skipped`): nothing runs after a failed append out of order.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { lowerOwnPriority, ownThreadId } from '../../process/own-thread.js';
import type { AppendReply, AppendRequest, AppendSetup } from './append-thread.js';
import { packEventFrames } from '../../bus/frames.js';
import { BODY_COLUMN, runAppend } from './event-repo.js';
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

/** The appends in the order sent: each runs once the one before it settled. */
let queue: Promise<void> = Promise.resolve();
/** The epoch of the last failed append: appends sent before the main thread heard of it are not run. */
let failedEpoch = -1;

/** Runs append `m` (its turn come), or refuses it unrun when it was sent before a failure was heard of; answers either way. */
async function run(m: Extract<AppendRequest, { seq: number }>): Promise<void> {
  if (m.epoch <= failedEpoch) {
    port.postMessage({ seq: m.seq, skipped: true } satisfies AppendReply);
    return;
  }
  let ids: (number | null)[];
  try {
    ids = await runAppend(x, x, setup.retention, m.columns, m.retryAfter);
  } catch (err) {
    failedEpoch = m.epoch;
    const e = err as Error;
    const fault = err instanceof PgFaultError ? { code: err.code, pgCode: err.pgCode } : null;
    port.postMessage({ seq: m.seq, error: { message: e?.message ?? String(err), fault } } satisfies AppendReply);
    return;
  }
  const frames = storedFrames(ids, m.columns[BODY_COLUMN] as string[]);
  port.postMessage({ seq: m.seq, ids, frames } satisfies AppendReply, frames === null ? [] : [frames]);
}

/**
 * The Server-Sent Events frames of the events an append stored (`ids[i]` non-null), as `console_append` stored each
 * one's JSON (`{"id":"<id>",` then its body but the body's `{`), packed as frames.ts packFrames does, to transfer; null
 * when they cannot be made (the main thread then frames the rows itself).
 */
function storedFrames(ids: readonly (number | null)[], bodies: readonly string[]): ArrayBuffer | null {
  try {
    const kept: number[] = [];
    const data: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (id == null) continue;
      kept.push(id);
      data.push(`{"id":"${id}",${(bodies[i] as string).slice(1)}`);
    }
    return packEventFrames(kept, data);
  } catch {
    return null;
  }
}

port.postMessage({ seq: 0, tid: ownThreadId(), nice } satisfies AppendReply);

port.on('message', (m: AppendRequest) => {
  if ('close' in m) {
    void queue.then(() => pool.end()).finally(() => port.close());
    return;
  }
  if ('ping' in m) {
    port.postMessage({ pong: m.ping } satisfies AppendReply);
    return;
  }
  queue = queue.then(() => run(m));
});
