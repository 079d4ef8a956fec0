/**
 * `GET /api/media/{project_id}/{file}` through the real server: whole files, byte ranges
 * (206, suffix, 416), conditional requests (304), content types, the SVG sandbox, and the
 * identifier guard on both segments (raw requests, so `..` reaches the server unnormalised).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw.js';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
const SIZE = 1000;
const FILES: Record<string, string> = {
  'clip.webm': 'video/webm',
  'clip.mp4': 'video/mp4',
  'still.png': 'image/png',
  'anim.gif': 'image/gif',
  'photo.jpg': 'image/jpeg',
  'photo.jpeg': 'image/jpeg',
};
const bytes = new Map<string, Buffer>();

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
  const dir = path.join(t.dataDir, 'projects', P, 'media');
  for (const name of Object.keys(FILES)) {
    const b = randomBytes(SIZE);
    bytes.set(name, b);
    fs.writeFileSync(path.join(dir, name), b);
  }
  fs.writeFileSync(path.join(dir, '.secret'), 'hidden');
  fs.mkdirSync(path.join(dir, 'folder'));
});
afterAll(() => t.close());

const get = (p: string, headers: Record<string, string> = {}) => rawRequest(t.url, p, { headers });
const binary = async (p: string, headers: Record<string, string> = {}) => {
  const res = await fetch(t.url + p, { headers });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
};

describe('GET /api/media/{project_id}/{file}', () => {
  it('serves the whole file with its type, validators, Accept-Ranges and nosniff', async () => {
    const { res, body } = await binary(`/api/media/${P}/clip.webm`);
    expect(res.status).toBe(200);
    expect(body.equals(bytes.get('clip.webm') as Buffer)).toBe(true);
    expect(res.headers.get('content-type')).toBe('video/webm');
    expect(res.headers.get('content-length')).toBe(String(SIZE));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('etag')).toMatch(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
    expect(res.headers.get('last-modified')).toBe(fs.statSync(path.join(t.dataDir, 'projects', P, 'media', 'clip.webm')).mtime.toUTCString());
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    // Inert everywhere: every media answer carries the sandbox (media-inert.test.ts).
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
    expect(res.headers.get('content-disposition')).toBeNull();
  });

  it('answers a byte range with 206, Content-Range and exactly those bytes', async () => {
    const { res, body } = await binary(`/api/media/${P}/clip.mp4`, { Range: 'bytes=10-19' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 10-19/${SIZE}`);
    expect(res.headers.get('content-length')).toBe('10');
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect(body.equals((bytes.get('clip.mp4') as Buffer).subarray(10, 20))).toBe(true);

    const open = await binary(`/api/media/${P}/clip.mp4`, { Range: 'bytes=990-' });
    expect(open.res.status).toBe(206);
    expect(open.res.headers.get('content-range')).toBe(`bytes 990-999/${SIZE}`);
    expect(open.body.equals((bytes.get('clip.mp4') as Buffer).subarray(990))).toBe(true);
  });

  it('answers a suffix range with the last bytes', async () => {
    const { res, body } = await binary(`/api/media/${P}/still.png`, { Range: 'bytes=-5' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 995-999/${SIZE}`);
    expect(body.equals((bytes.get('still.png') as Buffer).subarray(SIZE - 5))).toBe(true);
  });

  it('answers 416 with Content-Range bytes */size for an unsatisfiable range', async () => {
    const res = await get(`/api/media/${P}/still.png`, { Range: `bytes=${SIZE}-${SIZE + 10}` });
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe(`bytes */${SIZE}`);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json().detail).toBe(`range not satisfiable (the file has ${SIZE} bytes)`);
  });

  it('answers 304 to If-None-Match and If-Modified-Since, and a stale If-Range gets the whole file', async () => {
    const first = await get(`/api/media/${P}/anim.gif`);
    const etag = first.headers.etag as string;
    const lastModified = first.headers['last-modified'] as string;
    const byTag = await get(`/api/media/${P}/anim.gif`, { 'If-None-Match': etag });
    expect(byTag.status).toBe(304);
    expect(byTag.text).toBe('');
    expect(byTag.headers.etag).toBe(etag);
    expect((await get(`/api/media/${P}/anim.gif`, { 'If-Modified-Since': lastModified })).status).toBe(304);
    expect((await get(`/api/media/${P}/anim.gif`, { 'If-None-Match': 'W/"other"' })).status).toBe(200);

    // A changed file gets a new validator.
    const file = path.join(t.dataDir, 'projects', P, 'media', 'anim.gif');
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(file, later, later);
    const changed = await get(`/api/media/${P}/anim.gif`, { 'If-None-Match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);

    const stale = await binary(`/api/media/${P}/anim.gif`, { Range: 'bytes=0-9', 'If-Range': etag });
    expect(stale.res.status).toBe(200);
    expect(stale.body.length).toBe(SIZE);
    const fresh = await binary(`/api/media/${P}/anim.gif`, { Range: 'bytes=0-9', 'If-Range': changed.headers.etag as string });
    expect(fresh.res.status).toBe(206);
  });

  it('sends the content type of each extension', async () => {
    for (const [name, type] of Object.entries(FILES)) {
      const res = await fetch(`${t.url}/api/media/${P}/${name}`, { method: 'HEAD' });
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type'), name).toBe(type);
    }
  });

  it('serves SVG in a sandbox (Content-Security-Policy) since SVG can carry script', async () => {
    const res = await get(`/api/media/${P}/tk_0001.svg`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/svg+xml');
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.text).toBe(fs.readFileSync(path.join(t.dataDir, 'projects', P, 'media', 'tk_0001.svg'), 'utf8'));
  });

  it('answers 400 for a malformed project id or file name, traversal forms included', async () => {
    const cases: [string, RegExp][] = [
      [`/api/media/../${P}`, /^invalid project_id "\.\."/],
      [`/api/media/%2e%2e/tk_0001.svg`, /^invalid project_id "\.\."/],
      [`/api/media/${P}/..`, /^invalid file "\.\."/],
      [`/api/media/${P}/%2e%2e`, /^invalid file "\.\."/],
      [`/api/media/${P}/..%2fproject.json`, /^invalid file "\.\.\/project\.json"/],
      [`/api/media/${P}/..%2F..%2F..%2Fetc%2Fpasswd`, /^invalid file/],
      [`/api/media/${P}/%2fetc%2fpasswd`, /^invalid file/],
      [`/api/media/${P}/.secret`, /^invalid file "\.secret"/],
      [`/api/media/${P}/a..b.png`, /^invalid file "a\.\.b\.png"/],
      [`/api/media/${P}/x%00.png`, /^invalid file/],
      [`/api/media/..%2f${P}/tk_0001.svg`, /^invalid project_id/],
    ];
    for (const [p, detail] of cases) {
      const res = await get(p);
      expect(res.status, p).toBe(400);
      expect(res.json().detail, p).toMatch(detail);
    }
  });

  it('answers 404 for a missing file, a folder, or an unknown project', async () => {
    for (const p of [`/api/media/${P}/nope.png`, `/api/media/${P}/folder`, '/api/media/no-such-project/tk_0001.svg', '/api/media/night-market/still.png']) {
      const res = await get(p);
      expect(res.status, p).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().detail).toMatch(/^no media file/);
    }
  });
});
