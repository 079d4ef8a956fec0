/**
 * The bus's least time between flushes (src/bus/bus.ts, CONSOLE_EVENT_FLUSH_INTERVAL_MS; issue
 * 12, P7): an event after a quiet period is flushed at the end of its turn; events that follow
 * a flush within the interval wait for it, unless they make a batch (512) or someone needs them
 * stored now (a replay, a read, a subscription). Real SQLite file in a temp dir. The interval
 * is a minute, so no assertion depends on how fast the machine is.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER } from '../../src/bus/event.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';

let dir: string | undefined;
let db: Db | undefined;
afterEach(() => {
  db?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  db = undefined;
  dir = undefined;
});

/** A bus on a fresh database with `flushIntervalMs`, and the ids its subscriber received, batch by batch. */
function busWith(flushIntervalMs: number) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bus-interval-'));
  db = openStateDb(path.join(dir, 'state.db'));
  const log = new EventLog(db, 100_000);
  const bus = new EventBus(log, { flushIntervalMs });
  const batches: number[][] = [];
  bus.subscribe((batch: readonly EventRow[]) => batches.push(batch.map((r) => r.id)));
  const publish = (n = 1) => {
    for (let i = 0; i < n; i++) bus.publish({ severity: 'info', scope: 'test/flush', summary: `e${i}` });
  };
  return { bus, log, batches, publish };
}

/** Lets `n` event-loop turns pass (their check phases included). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

describe('bus flush interval', () => {
  it('flushes the first event after a quiet period at the end of its turn, and holds the next ones for the interval', async () => {
    const { bus, batches, publish } = busWith(60_000);
    publish();
    await turns(2);
    expect(batches).toEqual([[1]]);
    publish(3);
    await turns(20);
    // Within the interval: queued, neither stored nor delivered.
    expect(batches).toEqual([[1]]);
    expect(bus.backlog).toBe(3);
    bus.close();
  });

  it('flushes at once when a batch of 512 is queued, whatever the interval', async () => {
    const { bus, batches, publish } = busWith(60_000);
    publish();
    await turns(2);
    publish(511);
    expect(batches).toHaveLength(1);
    publish();
    // The 512th queued event flushed synchronously, in publish order.
    expect(batches).toHaveLength(2);
    expect(batches[1]).toEqual(Array.from({ length: 512 }, (_, i) => i + 2));
    expect(bus.backlog).toBe(0);
    bus.close();
  });

  it('stores what is held before a read, a replay point or a subscription, and at close', async () => {
    const { bus, log, batches, publish } = busWith(60_000);
    publish();
    await turns(2);
    publish(2);
    expect((await bus.readNewest(10, NO_FILTER)).map((r) => r.id)).toEqual([1, 2, 3]);
    publish();
    expect(bus.flushedHead()).toBe(4);
    expect(batches.flat()).toEqual([1, 2, 3, 4]);
    publish();
    bus.subscribe(() => {});
    expect(log.after(0, 10, NO_FILTER).map((r) => r.id)).toEqual([1, 2, 3, 4, 5]);
    publish();
    bus.close();
    expect(log.after(0, 10, NO_FILTER).map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('with interval 0 flushes at the end of every turn', async () => {
    const { bus, batches, publish } = busWith(0);
    publish();
    await turns(2);
    publish(2);
    await turns(2);
    expect(batches).toEqual([[1], [2, 3]]);
    bus.close();
  });
});
