/**
 * `POST /api/slash/dispatch` through the real server: the whitelist, the 422 listing the
 * allowed commands, and the event in scope `chat/slash`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents } from '../helpers/events.js';
import { startTestService, type TestService } from '../helpers/service.js';

const ALLOWED = ['/help', '/status', '/jobs', '/generate', '/memory', '/clear'];

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(() => t.close());

const dispatch = async (body: unknown) => {
  const res = await t.post('/api/slash/dispatch', body);
  return { status: res.status, json: (await res.json()) as any };
};

describe('POST /api/slash/dispatch', () => {
  it('publishes an allowed command in scope chat/slash and answers 202 with the event id', async () => {
    const r = await dispatch({ command: '/help' });
    expect(r.status).toBe(202);
    expect(r.json).toEqual({ id: expect.stringMatching(/^\d+$/), scope: 'chat/slash', command: '/help', args: null, projectId: null });
    const evs = await allEvents(t.url, 'scopePrefix=chat/slash');
    const e = evs.find((x) => x.id === r.json.id);
    expect(e).toMatchObject({ severity: 'info', scope: 'chat/slash', summary: 'Slash command /help', detail: null, payload: { command: '/help', args: null, project_id: null } });
  });

  it('carries arguments after a space and the project', async () => {
    const r = await dispatch({ command: '  /GENERATE   sh010 --fast  ', project_id: 'harbor-lights' });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ command: '/generate', args: 'sh010 --fast', projectId: 'harbor-lights' });
    const e = (await allEvents(t.url, 'scopePrefix=chat/slash')).find((x) => x.id === r.json.id);
    expect(e).toMatchObject({ summary: 'Slash command /generate sh010 --fast', payload: { command: '/generate', args: 'sh010 --fast', project_id: 'harbor-lights' } });
  });

  it('accepts every whitelisted command', async () => {
    for (const c of ALLOWED) expect((await dispatch({ command: c })).status, c).toBe(202);
  });

  it('refuses a command outside the whitelist with a 422 that lists the allowed commands, and publishes nothing', async () => {
    const before = (await allEvents(t.url, 'scopePrefix=chat/slash')).length;
    for (const command of ['/rm -rf /', 'help', '/', '/help2', '/ help', '/clear;ls', '$(reboot)']) {
      const r = await dispatch({ command });
      expect(r.status, command).toBe(422);
      const [issue] = r.json.detail;
      expect(issue.loc).toEqual(['body', 'command']);
      expect(issue.type).toBe('slash_command');
      expect(issue.msg).toContain(`allowed: ${ALLOWED.join(', ')}`);
      expect(issue.ctx.allowed).toEqual(ALLOWED);
    }
    expect(await allEvents(t.url, 'scopePrefix=chat/slash')).toHaveLength(before);
  });

  it('validates the body and the project id', async () => {
    expect((await dispatch({})).status).toBe(422);
    expect((await dispatch({ command: '' })).status).toBe(422);
    // A malformed id in a body is a 422 like any other invalid member.
    const bad = await dispatch({ command: '/help', projectId: 'a/../b' });
    expect(bad.status).toBe(422);
    expect(bad.json.detail).toEqual([{ loc: ['body', 'projectId'], msg: expect.stringMatching(/^invalid projectId/), type: 'invalid_id' }]);
    const unknown = await dispatch({ command: '/help', projectId: 'nope' });
    expect(unknown.status).toBe(404);
  });
});
