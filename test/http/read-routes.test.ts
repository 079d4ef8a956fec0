import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
const ID_MESSAGE = /^invalid \w+ .*letters, digits/;

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await t.close();
});

async function json(p: string): Promise<{ status: number; body: any }> {
  const res = await t.get(p);
  return { status: res.status, body: await res.json() };
}

const malformed = ['..', 'a..b', '.hidden', '-dash', 'x'.repeat(129), 'sp ace', 'semi;colon', '%2e%2e', '..%2Fetc', '%00'];

describe('GET /api/projects', () => {
  it('lists the format-2 projects by id and leaves the legacy one out', async () => {
    const { status, body } = await json('/api/projects');
    expect(status).toBe(200);
    expect(body.map((p: any) => p.id)).toEqual(['harbor-lights', 'night-market']);
    expect(body[0]).toMatchObject({ format: 2, id: P, title: 'Harbor Lights' });
  });

  it('reports the legacy project with exactly one warning event, however often it is listed', async () => {
    await json('/api/projects');
    await json('/api/projects');
    const warnings = (await allEvents(t.url, 'severities=warning&scopePrefix=engine/projects')).filter((e) => e.payload.project_id === 'old-pilot');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ severity: 'warning', scope: 'engine/projects' });
    expect(warnings[0]!.summary).toContain('old-pilot');
  });
});

describe('GET /api/projects/{project_id}', () => {
  it('answers the project', async () => {
    const { status, body } = await json(`/api/projects/${P}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: P, format: 2, title: 'Harbor Lights' });
  });

  it.each(malformed)('answers 400 with the message for the malformed id %j', async (id) => {
    // Raw request: fetch would resolve `..` and `%2e%2e` before sending.
    const res = await rawRequest(t.url, `/api/projects/${id.startsWith('%') || id === '..' ? id : encodeURIComponent(id)}`);
    expect(res.status).toBe(400);
    expect(res.json().detail).toMatch(ID_MESSAGE);
  });

  it('answers 404 naming an unknown project', async () => {
    const { status, body } = await json('/api/projects/no-such-project');
    expect(status).toBe(404);
    expect(body.detail).toContain('no-such-project');
  });

  it('answers 410 for a legacy project', async () => {
    const { status, body } = await json('/api/projects/old-pilot');
    expect(status).toBe(410);
    expect(body.detail).toBe('legacy project format: format 1 (project.yaml)');
  });
});

describe('episodes, scenes and beats', () => {
  it('synthesises one episode per distinct episode number', async () => {
    const { status, body } = await json(`/api/projects/${P}/episodes`);
    expect(status).toBe(200);
    expect(body.map((e: any) => e.id)).toEqual(['1', '2']);
    for (const e of body) expect(e.synthesized).toBe(true);
  });

  it('answers an empty array for an unknown project and 400 for a malformed one', async () => {
    expect(await json('/api/projects/nobody/episodes')).toEqual({ status: 200, body: [] });
    expect((await json('/api/projects/a..b/episodes')).status).toBe(400);
  });

  it('answers 410 on the entity routes of a legacy project', async () => {
    expect((await json('/api/projects/old-pilot/episodes')).status).toBe(410);
  });

  it('gives each episode exactly one synthetic scene', async () => {
    const { status, body } = await json(`/api/projects/${P}/episodes/2/scenes`);
    expect(status).toBe(200);
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({ id: 'main', episode_id: '2', synthesized: true });
  });

  it('answers 404 for an unknown episode and 400 for malformed ids on scenes', async () => {
    expect((await json(`/api/projects/${P}/episodes/9/scenes`)).status).toBe(404);
    expect((await json(`/api/projects/nobody/episodes/1/scenes`)).status).toBe(404);
    expect((await json(`/api/projects/${P}/episodes/..%2F1/scenes`)).status).toBe(400);
    expect((await json(`/api/projects/a..b/episodes/1/scenes`)).status).toBe(400);
  });

  it('orders beats by the smallest order of their shots and lists shots in order', async () => {
    const { status, body } = await json(`/api/projects/${P}/episodes/1/scenes/main/beats`);
    expect(status).toBe(200);
    expect(body.map((b: any) => b.id)).toEqual(['b01', 'b03', 'b02']);
    expect(body[0].shot_ids).toEqual(['sh010', 'sh020']);
    expect(body[2].shot_ids).toEqual(['sh030', 'sh040', 'sh050']);
  });

  it('answers 404 for an unknown episode or scene and 400 for malformed ids on beats', async () => {
    expect((await json(`/api/projects/${P}/episodes/7/scenes/main/beats`)).status).toBe(404);
    expect((await json(`/api/projects/${P}/episodes/1/scenes/other/beats`)).status).toBe(404);
    expect((await json(`/api/projects/${P}/episodes/1/scenes/a..b/beats`)).status).toBe(400);
  });
});

describe('takes and lineage', () => {
  it('lists a beat’s takes with parent_take_id and the recorded state', async () => {
    const { status, body } = await json(`/api/beats/b01/takes?projectId=${P}`);
    expect(status).toBe(200);
    expect(body.map((x: any) => x.take_id)).toEqual(['tk_0001', 'tk_0002', 'tk_0003', 'tk_0004', 'tk_0005']);
    expect(body[0].parent_take_id).toBeNull();
    expect(body[1].parent_take_id).toBe('tk_0001');
    for (const take of body) expect(take).toMatchObject({ primary: false, circled: false, rejected: false });
  });

  it('accepts project_id as an alias and answers [] for an unknown beat', async () => {
    expect((await json(`/api/beats/b01/takes?project_id=${P}`)).body).toHaveLength(5);
    expect(await json(`/api/beats/b99/takes?projectId=${P}`)).toEqual({ status: 200, body: [] });
  });

  it('answers 422 without projectId and 400 for malformed ids', async () => {
    const missing = await json('/api/beats/b01/takes');
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ loc: ['query', 'projectId'], type: 'missing' });
    expect((await json(`/api/beats/a..b/takes?projectId=${P}`)).status).toBe(400);
    expect((await json(`/api/beats/b01/takes?projectId=..%2Fetc`)).status).toBe(400);
  });

  it('roots the lineage at the beat by default', async () => {
    const { status, body } = await json(`/api/beats/b01/lineage?projectId=${P}`);
    expect(status).toBe(200);
    expect(body.root).toEqual({ kind: 'beat', id: 'b01' });
    const keys = body.nodes.map((n: any) => n.key);
    expect(keys).toEqual(expect.arrayContaining(['beat:b01', 'shot:sh010', 'shot:sh020', 'take:tk_0001', 'take:tk_0002', 'take:tk_0003', 'take:tk_0004', 'take:tk_0005']));
    const edges = body.edges.map((e: any) => `${e.from}>${e.to}`);
    expect(edges).toEqual(
      expect.arrayContaining(['beat:b01>shot:sh010', 'shot:sh010>take:tk_0001', 'take:tk_0001>take:tk_0002', 'take:tk_0001>take:tk_0003', 'take:tk_0002>take:tk_0004', 'shot:sh020>take:tk_0005']),
    );
  });

  it('keeps only the parent_take_id chain when rooted at a take: no siblings', async () => {
    const { status, body } = await json(`/api/beats/b01/lineage?projectId=${P}&takeId=tk_0004`);
    expect(status).toBe(200);
    expect(body.root).toEqual({ kind: 'take', id: 'tk_0004' });
    const takes = body.nodes.filter((n: any) => n.kind === 'take').map((n: any) => n.id);
    expect(takes).toEqual(['tk_0001', 'tk_0002', 'tk_0004']);
    const shots = body.nodes.filter((n: any) => n.kind === 'shot').map((n: any) => n.id);
    expect(shots).toEqual(['sh010']);
    expect(body.edges.map((e: any) => `${e.from}>${e.to}`)).toEqual(['beat:b01>shot:sh010', 'shot:sh010>take:tk_0001', 'take:tk_0001>take:tk_0002', 'take:tk_0002>take:tk_0004']);
  });

  it('answers 404 `no lineage for beat <id>` for a beat without shots or a take of another beat', async () => {
    for (const q of [`/api/beats/b99/lineage?projectId=${P}`, `/api/beats/b02/lineage?projectId=${P}&takeId=tk_0004`, `/api/beats/b01/lineage?projectId=nobody`]) {
      const { status, body } = await json(q);
      expect(status).toBe(404);
      expect(body.detail).toMatch(/^no lineage for beat b\d\d$/);
    }
  });

  it('answers 400 for a malformed beat, project or take id', async () => {
    expect((await json(`/api/beats/a..b/lineage?projectId=${P}`)).status).toBe(400);
    expect((await json(`/api/beats/b01/lineage?projectId=${P}&takeId=..`)).status).toBe(400);
  });
});

describe('GET /api/memory', () => {
  it('lists the memory entries with their enabled flags', async () => {
    const { status, body } = await json('/api/memory');
    expect(status).toBe(200);
    const byId = Object.fromEntries(body.map((m: any) => [m.id, m]));
    expect(Object.keys(byId).sort()).toEqual(['handheld-only', 'mara-wardrobe', 'style-palette']);
    expect(byId['handheld-only'].enabled).toBe(false);
    expect(byId['style-palette'].enabled).toBe(true);
  });
});

describe('conditional requests', () => {
  it('answers 304 to If-None-Match with the current ETag', async () => {
    const first = await t.get(`/api/projects/${P}/episodes`);
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    // Raw request: fetch adds `Cache-Control: no-cache` to conditional requests.
    const again = await rawRequest(t.url, `/api/projects/${P}/episodes`, { headers: { 'if-none-match': etag as string } });
    expect(again.status).toBe(304);
    const stale = await rawRequest(t.url, `/api/projects/${P}/episodes`, { headers: { 'if-none-match': 'W/"other"' } });
    expect(stale.status).toBe(200);
    // A list, the strong form of the same tag, and `*` all match; no-cache asks for the body.
    const strong = (etag as string).replace(/^W\//, '');
    for (const inm of [`W/"a", ${etag}`, strong, '*']) {
      expect((await rawRequest(t.url, `/api/projects/${P}/episodes`, { headers: { 'if-none-match': inm } })).status, inm).toBe(304);
    }
    const noCache = await rawRequest(t.url, `/api/projects/${P}/episodes`, { headers: { 'if-none-match': etag as string, 'cache-control': 'no-cache' } });
    expect(noCache.status).toBe(200);
    expect(noCache.json()).toHaveLength(2);
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const get = await rawRequest(t.url, `/api/projects/${P}/episodes`);
    const head = await rawRequest(t.url, `/api/projects/${P}/episodes`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers['content-length']).toBe(get.headers['content-length']);
    expect(head.headers['content-type']).toBe('application/json; charset=utf-8');
  });
});

describe('cross-cutting HTTP behaviour', () => {
  it('allows the configured origins without credentials and refuses others', async () => {
    const ok = await t.get('/api/health', { headers: { origin: 'http://localhost:5173' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    for (const origin of ['http://localhost:51730', 'http://localhost.evil:5173', 'https://localhost:5173', 'http://evil.example']) {
      const res = await t.get('/api/health', { headers: { origin } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    const pre = await fetch(`${t.url}/api/proposals/generate`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:5175', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-anything' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET,POST,PUT,DELETE,OPTIONS');
    expect(pre.headers.get('access-control-allow-headers')).toBe('x-anything');
  });

  it('answers JSON 404 for an unknown route', async () => {
    const { status, body } = await json('/api/nothing-here');
    expect(status).toBe(404);
    expect(body.detail).toContain('/api/nothing-here');
  });

  it('matches routes as Express does: any case, an optional trailing slash, never an empty parameter', async () => {
    expect((await json(`/API/Projects/${P}/`)).status).toBe(200);
    const empty = await json('/api/projects//episodes');
    expect(empty.status).toBe(404);
    expect(empty.body.detail).toContain('/api/projects//episodes');
  });

  it('answers 422 for a non-JSON body and for malformed JSON, and 413 past the body limit', async () => {
    const form = await fetch(`${t.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"project":"x"}' });
    expect(form.status).toBe(422);
    expect(((await form.json()) as any).detail[0]).toMatchObject({ loc: ['body'], type: 'content_type' });
    const bad = await fetch(`${t.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":' });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    const huge = await t.post('/api/proposals/generate', { project: P, pad: 'x'.repeat(t.config.http.maxBodyBytes + 10) });
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as any).detail).toMatch(/too large/);
  });

  it('serves health and config', async () => {
    expect(await json('/api/health')).toEqual({ status: 200, body: { ok: true } });
    expect(await json('/api/config')).toEqual({ status: 200, body: { schemaVersion: 1, ttydHost: null } });
  });
});

describe('a store that changes on disk', () => {
  it('shows a take written after the first read', async () => {
    expect((await json(`/api/beats/b03/takes?projectId=${P}`)).body).toEqual([]);
    const take = { take_id: 'tk_0900', shot_id: 'sh060', parent_take_id: null, created_at: '2026-11-01T00:00:00Z' };
    fs.writeFileSync(path.join(t.dataDir, 'projects', P, 'takes', 'tk_0900.json'), JSON.stringify(take));
    const body = await waitFor(async () => {
      const r = await json(`/api/beats/b03/takes?projectId=${P}`);
      return r.body.length === 1 ? r.body : undefined;
    }, 'the new take');
    expect(body[0]).toMatchObject({ take_id: 'tk_0900', parent_take_id: null });
  });
});

describe('missing canonical fields', () => {
  let u: TestService;
  beforeAll(async () => {
    // Broken before start-up, so no test depends on the watcher's timing.
    const { tmp, dataDir } = makeTempStore();
    const dir = path.join(dataDir, 'projects');
    // night-market: project.json without its title.
    const pj = JSON.parse(fs.readFileSync(path.join(dir, 'night-market', 'project.json'), 'utf8'));
    delete pj.title;
    fs.writeFileSync(path.join(dir, 'night-market', 'project.json'), JSON.stringify(pj));
    // harbor-lights: one shot without its episode.
    const shot = JSON.parse(fs.readFileSync(path.join(dir, P, 'shots', 'sh140.json'), 'utf8'));
    delete shot.episode;
    fs.writeFileSync(path.join(dir, P, 'shots', 'sh140.json'), JSON.stringify(shot));
    // a format-1 project.json is legacy too
    fs.mkdirSync(path.join(dir, 'older'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'older', 'project.json'), JSON.stringify({ format: 1, id: 'older', title: 'Older' }));
    u = await startTestService({ tmp });
  });
  afterAll(async () => {
    await u.close();
  });

  const get = async (p: string) => {
    const res = await u.get(p);
    return { status: res.status, body: (await res.json()) as any };
  };

  it('answers 422 with the MissingCanonicalField detail on the project route', async () => {
    const { status, body } = await get('/api/projects/night-market');
    expect(status).toBe(422);
    expect(body.detail).toEqual({
      error: 'missing_canonical_field',
      field: 'title',
      project_id: 'night-market',
      remediation: expect.any(String),
      fix_cli: expect.stringContaining('night-market'),
    });
  });

  it('answers 422 on every entity route of a project with a broken shot file', async () => {
    for (const p of [
      `/api/projects/${P}/episodes`,
      `/api/projects/${P}/episodes/1/scenes`,
      `/api/projects/${P}/episodes/1/scenes/main/beats`,
      `/api/beats/b01/takes?projectId=${P}`,
      `/api/beats/b01/lineage?projectId=${P}`,
    ]) {
      const { status, body } = await get(p);
      expect(status, p).toBe(422);
      expect(body.detail).toMatchObject({ error: 'missing_canonical_field', field: 'episode', project_id: P });
      expect(body.detail.remediation).toContain('sh140.json');
    }
  });

  it('answers 410 `legacy project format: format 1` for a format-1 project.json', async () => {
    expect(await get('/api/projects/older')).toEqual({ status: 410, body: { detail: 'legacy project format: format 1', code: 'legacy_project' } });
  });

  it('leaves projects with a broken project.json out of the list, with a warning each', async () => {
    const { body } = await get('/api/projects');
    expect(body.map((p: any) => p.id)).toEqual([P]);
    const warned = (await allEvents(u.url, 'severities=warning&scopePrefix=engine/projects')).map((e) => e.payload.project_id);
    expect(warned).toEqual(expect.arrayContaining(['night-market', 'older', 'old-pilot']));
  });
});
