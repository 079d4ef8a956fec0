/**
 * A job line's event JSON as the job I/O thread makes it (src/supervisor/line-event.ts): the per-job
 * LineEncoder writes exactly lineTail's text, itself the bus's own serialisation after the id and time,
 * for every kind of text, both streams, cut or not, and proposal ids that JSON must escape.
 */
import { describe, expect, it } from 'vitest';
import { eventHead, EventJson } from '../../src/bus/event-json.js';
import { LINE_PAYLOAD, LineEncoder, lineDetail, lineSeverity, lineTail } from '../../src/supervisor/line-event.js';

const TEXTS = ['', 'plain', 'quote " backslash \\ tab \t nul \u0000 ctl \u001f', 'é 😀 \u2028 \u2029', 'lone \ud800 surrogate \udfff', '{"json":"inside"}', 'x'.repeat(5000)];
const PROPOSALS = ['p-1', '0b9d2e7c-5a4e-4f7e-9a51-3c2d7a1e9f00', 'odd "id" \\ \n é'];

describe('a job line’s event JSON', () => {
  it('is the same from the per-job encoder, from lineTail, and from the bus’s serialisation of the event', () => {
    const json = new EventJson();
    for (const proposalId of PROPOSALS) {
      for (const maxBytes of [64, 1048576]) {
        const encoder = new LineEncoder(proposalId, maxBytes);
        for (const stream of [0, 1] as const) {
          for (const [i, text] of TEXTS.entries()) {
            for (const cut of [false, true]) {
              const number = i * 997 + 1;
              const tail = encoder.tail(stream, number, text, cut);
              expect(tail).toBe(lineTail(proposalId, stream, number, text, cut, maxBytes));
              const event = {
                id: '42',
                ts: '2026-11-29T12:00:00.000Z',
                severity: lineSeverity(stream),
                scope: 'engine/generation',
                summary: text,
                detail: lineDetail(proposalId, stream, number, cut, maxBytes),
                payload: LINE_PAYLOAD,
              };
              expect(eventHead(42, event.ts) + tail).toBe(json.serialize(event));
              expect(JSON.parse(eventHead(42, event.ts) + tail)).toEqual(event);
            }
          }
        }
      }
    }
  });

  it('names the stream, the line and a cut in the detail, with the severities of the state table', () => {
    const event = JSON.parse(eventHead(1, 't') + new LineEncoder('p-9', 128).tail(1, 12, 'oops', true)) as { severity: string; detail: string };
    expect(event.detail).toBe('p-9 stderr line 12 (cut at 128 bytes)');
    expect(event.severity).toBe('warning');
    expect(lineSeverity(0)).toBe('info');
  });
});
