/**
 * An append's rows as they cross to the event writer thread (src/state/sqlite/append-wire.ts): packed, cloned as a
 * message is, and unpacked, they are the rows the main connection's append writes (event-append.ts rowColumns), each
 * job line's JSON joined to its head; and the packed form holds a few strings, not five a row.
 */
import { describe, expect, it } from 'vitest';
import { LineRow } from '../../src/bus/bus-options.js';
import { SEVERITIES, type JobEnd, type JobStart } from '../../src/bus/event.js';
import { eventHead } from '../../src/bus/event-json.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { packRows, unpackRows } from '../../src/state/sqlite/append-wire.js';
import { rowColumns } from '../../src/state/sqlite/event-append.js';

const end: JobEnd = { state: 'exited ok', endedAt: '2026-12-02T00:00:01.000Z', rc: 0, signal: null, stdoutLines: 2, stderrLines: 0, exitReason: 'exited', exitDetail: null };
const start: JobStart = {
  job: { proposalId: 'p-1', projectId: 'demo', pid: 42, argv: ['tool', '--x'], startedAt: '2026-12-02T00:00:00.000Z', instanceId: 'i-1' },
  proposal: { id: 'p-1', kind: null, title: null, payload: {}, createdAt: '2026-12-02T00:00:00.000Z' },
} as JobStart;

/** Packed, cloned as postMessage clones it, unpacked. */
const across = (rows: readonly EventRow[]) => unpackRows(structuredClone(packRows(rows)));

describe('an append’s rows packed for the event writer thread', () => {
  it('unpack to the columns the main connection writes, each severity, scope, proposal and JSON in place', () => {
    const rows: EventRow[] = [];
    // Every severity, scopes and proposals in runs and alternating, none; texts empty, multi-byte, with separators.
    const texts = ['{"a":1}', '', '{"summary":"日本語 ✓ 🎬"}', '{"s":"\\n\\u0000"}', '{"x":"' + 'y'.repeat(5000) + '"}'];
    for (let i = 0; i < 40; i++) {
      rows.push({
        id: 100 + i,
        severity: SEVERITIES[i % SEVERITIES.length]!,
        scope: i % 7 < 4 ? 'generation' : `console/${i % 3}`,
        proposalId: i % 5 === 0 ? null : `p-${i % 4}`,
        data: texts[i % texts.length]!,
      });
    }
    expect(across(rows)).toEqual(rowColumns(rows));
  });

  it('join a job line’s JSON to its head (its id and time) there, and leave a joined one as it is', () => {
    const tail = '"severity":"info","scope":"generation","summary":"frame 7 ✓","detail":"p-1 stdout line 7","payload":{}}';
    const split = new LineRow(7, 'info', 'generation', 'p-1', '2026-12-02T00:00:00.123Z', tail, undefined);
    const joined = new LineRow(8, 'info', 'generation', 'p-1', '2026-12-02T00:00:00.124Z', tail, undefined);
    expect(joined.data).toBe(eventHead(8, '2026-12-02T00:00:00.124Z') + tail);
    const plain: EventRow = { id: 9, severity: 'success', scope: 'console/decision', proposalId: 'p-1', data: '{"id":"9"}' };
    const out = across([split, joined, plain]);
    expect(out.data).toEqual([eventHead(7, '2026-12-02T00:00:00.123Z') + tail, joined.data, '{"id":"9"}']);
    expect(JSON.parse(out.data[0]!)).toMatchObject({ id: '7', ts: '2026-12-02T00:00:00.123Z', summary: 'frame 7 ✓' });
    // Its JSON was not made on this side.
    expect(split.isJoined).toBe(false);
  });

  it('carry the job starts and ends riding on rows, by index', () => {
    const rows: EventRow[] = [
      { id: 1, severity: 'info', scope: 'generation', proposalId: 'p-1', data: '{}', guard: { job: 'p-1', start } },
      { id: 2, severity: 'info', scope: 'generation', proposalId: 'p-1', data: '{}', guard: { job: 'p-1' } },
      { id: 3, severity: 'success', scope: 'generation', proposalId: 'p-1', data: '{}', guard: { job: 'p-1', end } },
    ];
    const out = across(rows);
    expect(out.starts).toEqual([start]);
    expect(out.ends).toEqual([{ i: 2, job: 'p-1', end }]);
    expect(out).toEqual(rowColumns(rows));
  });

  it('hold each distinct scope, proposal and time once, and every JSON in one string', () => {
    const rows = Array.from(
      { length: 512 },
      (_, i) => new LineRow(i + 1, i % 2 === 0 ? 'info' : 'warning', 'generation', `p-${i % 4}`, `2026-12-02T00:00:00.${String(100 + (i >> 7)).padStart(3, '0')}Z`, `"n":${i}}`, undefined),
    );
    const packed = packRows(rows);
    expect([...packed.words].sort()).toEqual([
      '2026-12-02T00:00:00.100Z',
      '2026-12-02T00:00:00.101Z',
      '2026-12-02T00:00:00.102Z',
      '2026-12-02T00:00:00.103Z',
      'generation',
      'p-0',
      'p-1',
      'p-2',
      'p-3',
    ]);
    expect(typeof packed.text).toBe('string');
    expect(unpackRows(packed).data[511]).toBe(`{"id":"512","ts":"2026-12-02T00:00:00.103Z","n":511}`);
  });

  it('pack no rows', () => {
    expect(across([])).toEqual(rowColumns([]));
  });
});
