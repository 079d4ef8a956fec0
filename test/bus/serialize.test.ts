import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER } from '../../src/bus/event.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { LINE_PAYLOAD, lineDetail, lineSeverity, lineTail } from '../../src/supervisor/line-event.js';

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

  it('of a job line encoded on the job I/O thread is the text the bus makes of the line itself, and filters by its proposal', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bus-serialize-'));
    db = openStateDb(path.join(dir, 'state.db'));
    const bus = new EventBus(new EventLog(db, 1000));
    const delivered: string[] = [];
    bus.subscribe((batch) => delivered.push(...batch.map((r) => r.data)));
    const lines: [0 | 1, string, boolean][] = [
      [0, 'plain', false],
      [1, 'quote " backslash \\ tab \t nul \u0000 é 😀 \ud800 \u2028', true],
      [0, '', false],
    ];
    const guards = { settled: [] as boolean[] };
    lines.forEach(([stream, text, cut], i) => {
      const tail = lineTail('p-42', stream, i + 1, text, cut, 64);
      bus.publishEncoded(lineSeverity(stream), 'engine/generation', tail, 'p-42', { job: 'p-42', settled: (ok) => guards.settled.push(ok) });
    });
    bus.publish({ severity: 'info', scope: 'engine/generation', summary: 'another job', proposalId: 'p-43' });
    bus.flush();
    const rows = new EventLog(db, 1000).after(0, 10, { ...NO_FILTER, proposalId: 'p-42' });
    expect(rows).toHaveLength(3);
    rows.forEach((row, i) => {
      const [stream, text, cut] = lines[i] as [0 | 1, string, boolean];
      const parsed = JSON.parse(row.data) as { id: string; ts: string };
      const made = {
        id: parsed.id,
        ts: parsed.ts,
        severity: lineSeverity(stream),
        scope: 'engine/generation',
        summary: text,
        detail: lineDetail('p-42', stream, i + 1, cut, 64),
        payload: LINE_PAYLOAD,
      };
      expect(row.data).toBe(JSON.stringify(made));
      expect(row.severity).toBe(lineSeverity(stream));
    });
    expect(JSON.parse(rows[1]!.data).detail).toBe('p-42 stderr line 2 (cut at 64 bytes)');
    expect(delivered.slice(0, 3)).toEqual(rows.map((r) => r.data));
    expect(delivered).toHaveLength(4);
    expect(guards.settled).toEqual([true, true, true]);
  });
});
