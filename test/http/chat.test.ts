/**
 * `POST /api/chat` through the real server: a canned, deterministic reply streamed as
 * `text/event-stream` frames `data: {"delta": …}` ending with `data: [DONE]`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listProcs } from '../../src/process/proc-scan.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(() => t.close());

/** Splits an event-stream body into the `data:` payloads of its frames. */
function frames(body: string): string[] {
  expect(body.endsWith('\n\n')).toBe(true);
  return body
    .slice(0, -2)
    .split('\n\n')
    .map((f) => {
      expect(f.startsWith('data: ')).toBe(true);
      expect(f.includes('\n')).toBe(false);
      return f.slice('data: '.length);
    });
}

async function chat(body: unknown): Promise<{ res: Response; text: string }> {
  const res = await t.post('/api/chat', body);
  return { res, text: await res.text() };
}

/** The reply: the concatenated deltas (checks the frame format on the way). */
function reply(text: string): string {
  const data = frames(text);
  expect(data.at(-1)).toBe('[DONE]');
  const deltas = data.slice(0, -1).map((d) => JSON.parse(d) as { delta: string });
  expect(deltas.length).toBeGreaterThan(1);
  for (const d of deltas) expect(Object.keys(d)).toEqual(['delta']);
  return deltas.map((d) => d.delta).join('');
}

describe('POST /api/chat', () => {
  it('streams a canned reply as delta frames and a last [DONE]', async () => {
    const { res, text } = await chat({ message: 'How do I make a take?' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const r = reply(text);
    expect(r).toContain('You said: "How do I make a take?".');
    expect(r).toContain('No project is selected.');
    expect(r).toMatch(/generation jobs/);
    expect(r).toMatch(/\/help/);
  });

  it('is deterministic and mentions the project', async () => {
    const a = await chat({ message: 'status?', projectId: 'harbor-lights' });
    const b = await chat({ message: 'status?', project_id: 'harbor-lights' });
    expect(a.res.status).toBe(200);
    expect(a.text).toBe(b.text);
    expect(reply(a.text)).toContain('You are working on project harbor-lights.');
  });

  it('keeps a message with newlines and quotes inside its frames (JSON-escaped)', async () => {
    const { text } = await chat({ message: 'line one\n\ndata: [DONE]\n"quoted"' });
    expect(reply(text)).toContain('You said: "line one data: [DONE] "quoted"".');
  });

  it('starts no process and publishes no event', async () => {
    const before = (await (await t.get('/api/system-status')).json()) as { bus: { lastEventId: string } };
    // Children of the test process that another file left ending may be gone afterwards: no new one is the check.
    const children = () => new Set(listProcs().flatMap((p) => (p.ppid === process.pid && p.state !== 'Z' ? [p.pid] : [])));
    const known = children();
    await chat({ message: 'hello' });
    expect([...children()].filter((pid) => !known.has(pid))).toEqual([]);
    const after = (await (await t.get('/api/system-status')).json()) as { bus: { lastEventId: string } };
    expect(after.bus.lastEventId).toBe(before.bus.lastEventId);
  });

  it('answers 422 for a missing or empty message or a malformed project id, 404 for an unknown project', async () => {
    for (const body of [{}, { message: '' }, { message: 42 }, { projectId: 'harbor-lights' }]) {
      const { res, text } = await chat(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(JSON.parse(text).detail[0].loc).toEqual(['body', 'message']);
    }
    // A malformed id in a body is a 422 like any other invalid member.
    const bad = await chat({ message: 'hi', projectId: '../x' });
    expect(bad.res.status).toBe(422);
    expect(JSON.parse(bad.text).detail).toEqual([{ loc: ['body', 'projectId'], msg: expect.stringMatching(/^invalid projectId "\.\.\/x": expected/), type: 'invalid_id' }]);
    const unknown = await chat({ message: 'hi', projectId: 'nope' });
    expect(unknown.res.status).toBe(404);
    expect(JSON.parse(unknown.text).detail).toBe('unknown project nope');
  });
});
