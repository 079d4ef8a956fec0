import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER } from '../../src/bus/event.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';

let dir: string;
let db: Db;
afterEach(() => {
  db?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('stored event text', () => {
  it('is exactly JSON.stringify of the event, members in order, for awkward content', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bus-serialize-'));
    db = openStateDb(path.join(dir, 'state.db'));
    const bus = new EventBus(new EventLog(db, 1000));
    const inputs = [
      { severity: 'info' as const, scope: 'engine/generation', summary: 'plain' },
      { severity: 'warning' as const, scope: 'a/"b"\\c', summary: 'quote " backslash \\ newline \n tab \t nul \u0000 é 😀 \ud800', detail: 'd"\n' },
      { severity: 'fallback' as const, scope: '', summary: '', detail: null, payload: { nested: { list: [1, 'two', null, true] }, 'odd"key': '\u2028' } },
    ];
    const published = inputs.map((i) => bus.publish(i));
    bus.flush();
    const rows = new EventLog(db, 1000).after(0, 10, NO_FILTER);
    expect(rows).toHaveLength(3);
    rows.forEach((row, i) => {
      expect(row.data).toBe(JSON.stringify(published[i]));
      expect(Object.keys(JSON.parse(row.data))).toEqual(['id', 'ts', 'severity', 'scope', 'summary', 'detail', 'payload']);
    });
  });
});
