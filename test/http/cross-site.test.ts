/**
 * Cross-site requests that change state are refused (src/http/origin-check.ts): with no token
 * set, a page of any other site could otherwise make its visitor's browser approve, reject or
 * defer a proposal, or cancel a job, with an auto-submitted form (an empty body passes the
 * JSON-only rule). Tried over HTTP in every spelling of a foreign origin, and in Chromium with
 * a real attacker page on another origin; the service's own page and the allowed CORS origins
 * still write.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, usePatience } from '../helpers/browser.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
let browser: Browser | undefined;
let attacker: http.Server | undefined;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await browser?.close();
  attacker?.close();
  await t?.close();
});

const pending = async () =>
  ((await (await fetch(`${t.url}/api/proposals`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'target' }) })).json()) as { proposalId: string })
    .proposalId;
const statusOf = async (id: string) => ((await (await fetch(`${t.url}/api/proposals?limit=1000`)).json()) as { id: string; status: string }[]).find((p) => p.id === id)?.status;

describe('a state-changing request from another site', () => {
  it('is refused (403 cross_site_request) for every foreign origin, bodiless or not, and changes nothing', async () => {
    const id = await pending();
    const port = new URL(t.url).port;
    const foreign = [
      'https://evil.example',
      'http://evil.example',
      'null',
      `http://127.0.0.1:${Number(port) + 1}`,
      `http://127.0.0.1.evil.example:${port}`,
      `http://localhost:${port}.evil.example`,
      'http://localhost:5176',
      'http://localhost:5173.evil.example',
      'file://',
      'chrome-extension://abc',
    ];
    for (const origin of foreign) {
      for (const [method, path] of [
        ['POST', `/api/proposals/${id}/approve`],
        ['POST', `/api/proposals/${id}/defer`],
        ['POST', '/api/jobs/gen_000000000000/cancel'],
        ['PUT', '/api/workspace-state/w1'],
        ['POST', '/api/proposals'],
      ] as const) {
        // A form's request: no body, or a urlencoded one.
        const res = await fetch(`${t.url}${path}`, { method, headers: { origin, 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
        const body = (await res.json()) as { code?: string };
        expect([origin, method, path, res.status, body.code]).toEqual([origin, method, path, 403, 'cross_site_request']);
      }
    }
    expect(await statusOf(id)).toBe('pending');
  });

  it('goes through from the service’s own origin (any letter case), an allowed CORS origin, or without Origin', async () => {
    const port = new URL(t.url).port;
    for (const origin of [`http://127.0.0.1:${port}`, `HTTP://127.0.0.1:${port}`, 'http://localhost:5173', 'http://127.0.0.1:5175', undefined]) {
      const id = await pending();
      const res = await fetch(`${t.url}/api/proposals/${id}/approve`, { method: 'POST', headers: origin === undefined ? {} : { origin } });
      expect([origin, res.status]).toEqual([origin, 200]);
      expect(await statusOf(id)).toBe('approved');
    }
    // Reads are never refused for their origin (CORS decides what a page may read).
    expect((await fetch(`${t.url}/api/proposals`, { headers: { origin: 'https://evil.example' } })).status).toBe(200);
  });

  it('an auto-submitted form on a real attacker page in Chromium approves nothing', async () => {
    const id = await pending();
    attacker = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><form method="POST" action="${t.url}/api/proposals/${id}/approve"></form><script>document.forms[0].submit()</script>`);
    });
    await new Promise<void>((r) => attacker!.listen(0, '127.0.0.1', r));
    browser = await launchBrowser();
    const page = await browser.newPage();
    usePatience(page);
    const answered = page.waitForResponse((r) => r.url().includes(`/api/proposals/${id}/approve`));
    await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
    const res = await answered;
    expect(res.status()).toBe(403);
    expect(await statusOf(id)).toBe('pending');
  });
});
