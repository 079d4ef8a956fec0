/**
 * Media files are inert in the service's origin: whoever supplies a project folder (or a tool
 * that writes media) gets no page and no script of this origin out of it. Every type a browser
 * could run (HTML in its spellings, XML, XHTML, scripts, style sheets, PDF, SVG opened as a
 * document) is tried over HTTP, and in a real Chromium: opened directly, each file's script
 * would create a proposal with the service's API; none may.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, usePatience } from '../helpers/browser.js';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
const MEDIA_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";
/** What a hostile file's script does: create a proposal titled with its own name. */
const attack = (name: string) => `fetch('/api/proposals', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'xss ${name}' }) })`;

/** Files a browser could run, by name, with what each would run. */
const HOSTILE: Record<string, string> = {
  'evil.html': `<!doctype html><script>${attack('evil.html')}</script>`,
  'evil.htm': `<script>${attack('evil.htm')}</script>`,
  'evil.shtml': `<script>${attack('evil.shtml')}</script>`,
  'evil.xhtml': `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>${attack('evil.xhtml')}</script></body></html>`,
  'evil.xht': `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>${attack('evil.xht')}</script></body></html>`,
  'evil.xml': `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><script>${attack('evil.xml')}</script></html>`,
  'evil.svg': `<svg xmlns="http://www.w3.org/2000/svg"><script>${attack('evil.svg')}</script></svg>`,
  'evil.js': attack('evil.js'),
  'evil.mjs': attack('evil.mjs'),
  'evil.css': 'body { background: red }',
  'evil.pdf': '%PDF-1.4 not really',
  'evil.EXE': 'MZ',
  noextension: `<script>${attack('noextension')}</script>`,
  'EVIL.HTML': `<script>${attack('EVIL.HTML')}</script>`,
};

let t: TestService;
let browser: Browser | undefined;
beforeAll(async () => {
  t = await startTestService();
  for (const [name, body] of Object.entries(HOSTILE)) fs.writeFileSync(path.join(t.dataDir, 'projects', P, 'media', name), body);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const proposalsTitled = async (prefix: string) => ((await (await fetch(`${t.url}/api/proposals?limit=1000`)).json()) as { title: string | null }[]).filter((p) => p.title?.startsWith(prefix));

describe('every media answer is inert', () => {
  it('serves only images, video, audio and plain text as themselves; anything else as an octet-stream attachment; all in a sandbox', async () => {
    for (const name of Object.keys(HOSTILE)) {
      const res = await fetch(`${t.url}/api/media/${P}/${name}`);
      await res.arrayBuffer();
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-security-policy'), name).toBe(MEDIA_CSP);
      expect(res.headers.get('x-content-type-options'), name).toBe('nosniff');
      if (name === 'evil.svg') {
        expect(res.headers.get('content-type')).toBe('image/svg+xml');
        expect(res.headers.get('content-disposition')).toBeNull();
      } else {
        expect(res.headers.get('content-type'), name).toBe('application/octet-stream');
        expect(res.headers.get('content-disposition'), name).toMatch(/^attachment; filename=/);
      }
    }
    // The inert types keep their own, with the sandbox too.
    const png = await fetch(`${t.url}/api/media/${P}/tk_0001.svg`, { method: 'HEAD' });
    expect(png.headers.get('content-security-policy')).toBe(MEDIA_CSP);
  });

  it('runs nothing of a hostile file in a real browser: opened directly, or as a script or style sheet of a page of this origin', async () => {
    browser = await launchBrowser();
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    usePatience(page);
    for (const name of Object.keys(HOSTILE)) {
      // A download aborts the navigation; a sandboxed document runs no script. Had a script
      // run, its request would be in flight: the network goes idle only once it is answered.
      await page.goto(`${t.url}/api/media/${P}/${name}`, { waitUntil: 'networkidle' }).catch(() => undefined);
    }
    // A page of this origin (one with no policy of its own: only the type of what is loaded
    // stands in the way) that loads them as scripts and a style sheet.
    await page.goto(`${t.url}/api/health`);
    const base = `/api/media/${P}`;
    const tryLoad = (p: Promise<unknown>) =>
      p.then(
        () => 'loaded',
        () => 'refused',
      );
    const loaded = await Promise.all([
      tryLoad(page.addScriptTag({ url: `${base}/evil.js` })),
      tryLoad(page.addScriptTag({ url: `${base}/evil.mjs`, type: 'module' })),
      tryLoad(page.addScriptTag({ url: `${base}/noextension` })),
      tryLoad(page.addStyleTag({ url: `${base}/evil.css` })),
    ]);
    expect(loaded).toEqual(['refused', 'refused', 'refused', 'refused']);
    await page.waitForLoadState('networkidle');
    expect(await proposalsTitled('xss ')).toEqual([]);
    await context.close();
  });
});
