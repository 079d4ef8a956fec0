/**
 * The status view in a real browser (chromium, playwright-core) against the real service:
 * at a glance (every figure in a unit, each group headed ok / degraded / down with the reason in
 * words, the raw JSON one click away), through a generation storm that drops a slow stream
 * client ("degraded" with its reason), with the last 15 minutes drawn as charts that move with
 * each sample; laid out without overflow from 1024 to 1920 px; no console error and no
 * Content-Security-Policy refusal. The service samples every 500 ms (CONSOLE_HISTORY_SAMPLE_MS);
 * waits are for the page's own elements, never for times.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { waitFor } from '../helpers/events.js';
import { layoutProblems } from '../helpers/layout.js';
import { fixture, publishOn, startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
let browser: Browser;
let page: Page;
let problems: string[];
const sockets: net.Socket[] = [];

beforeAll(async () => {
  t = await startTestService({ env: { DISPATCH_CLI: fixture('load-tool.mjs'), CONSOLE_HISTORY_SAMPLE_MS: '500' } });
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await browser?.close();
  await t?.close();
});

/** The figures shown: their unit and text. */
const figures = () => page.$$eval('.status-view .figure', (els) => els.map((e) => ({ unit: e.getAttribute('data-unit') ?? '', text: (e.textContent ?? '').trim() })));

/** The (x, y) pixels of `png` whose colour is within `tolerance` of `rgb`. */
function pixelsOf(png: PNG, rgb: [number, number, number], tolerance = 40): number {
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    if (Math.abs((png.data[i] as number) - rgb[0]) + Math.abs((png.data[i + 1] as number) - rgb[1]) + Math.abs((png.data[i + 2] as number) - rgb[2]) < tolerance) n++;
  }
  return n;
}

/** The first series' colour (charts.js). */
const FIRST_SERIES: [number, number, number] = [0x2f, 0x6f, 0xdb];

describe('the status view', () => {
  it('shows every group headed by its state, every figure with a unit, and the raw JSON one click away', async () => {
    await page.goto(`${t.url}/#/status`);
    await page.waitForSelector('#status-overall[data-state="ok"]');
    for (const section of ['service', 'readiness', 'jobs', 'bus', 'workers', 'cache', 'database', 'fallbacks', 'writeProxy', 'guards', 'hosts', 'limits']) {
      await page.waitForSelector(`.group[data-section="${section}"][data-state="ok"] .health[data-state="ok"]`);
    }
    expect(await page.textContent('#status-overall')).toContain('All ok');
    const shown = await figures();
    expect(shown.length).toBeGreaterThan(60);
    for (const f of shown) {
      expect(f.unit, f.text).not.toBe('');
      expect(f.text.endsWith(f.unit), `${f.text} ends with its unit ${f.unit}`).toBe(true);
    }
    // The bounds in human units: 8 MiB, not 8388608; 30 s, not 30000.
    const limits = await page.textContent('.group[data-section="limits"]');
    expect(limits).toMatch(/CONSOLE_SSE_MAX_QUEUE_BYTES\s*8 MiB/);
    expect(limits).toMatch(/CONSOLE_STORE_READ_TIMEOUT_MS\s*30 s/);
    expect(limits).toMatch(/CONSOLE_JOB_HISTORY\s*10,000 jobs/);
    // Facts in words are never bare numbers (every number is a figure, with its unit); an
    // identifier (the version, an event id) is not a figure.
    const texts = await page.$$eval('.status-view .figures dd.text:not([data-kind="id"])', (dds) => dds.map((d) => (d.textContent ?? '').trim()));
    for (const text of texts) expect(text).not.toMatch(/^-?[\d.,]+$/);
    // The raw JSON, one click away.
    expect(await page.isVisible('#status-json')).toBe(false);
    await page.click('#status-raw summary');
    await page.waitForSelector('#status-json', { state: 'visible' });
    const raw = JSON.parse((await page.textContent('#status-json')) ?? '') as { version: string; limits: Record<string, number> };
    expect(raw.version).toBe('2.0.0');
    expect(raw.limits.CONSOLE_SSE_MAX_QUEUE_BYTES).toBe(8 * 1024 * 1024);
    await page.click('#status-raw summary');
  });

  it('shows "degraded" with its reason under a generation storm that drops a slow stream client; the charts draw it and move', async () => {
    await page.waitForSelector('figure.chart[data-panel="lines"] canvas');
    // The storm: four jobs flooding their output, and a stream client that stops reading.
    for (let i = 0; i < 4; i++) expect((await t.post('/api/proposals/generate', { project: 'harbor-lights', shotId: 'flood20000' })).status).toBe(202);
    const slow = net.connect(t.service.port, '127.0.0.1');
    sockets.push(slow);
    slow.on('error', () => {});
    await new Promise((r) => slow.once('connect', r));
    slow.pause();
    slow.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
    // Past CONSOLE_SSE_MAX_QUEUE_BYTES (8 MiB) and the kernel's buffers, the stalled client is dropped.
    const padding = 'x'.repeat(2000);
    await waitFor(async () => {
      for (let i = 0; i < 500; i++) publishOn(t, { severity: 'info', scope: 'test/storm', summary: `storm ${i}`, detail: padding });
      await new Promise((r) => setImmediate(r));
      const s = (await (await t.get('/api/system-status')).json()) as { bus: { slowClientsDropped: number } };
      return s.bus.slowClientsDropped >= 1 ? true : undefined;
    }, 'the stalled client to be dropped');

    await page.waitForSelector('.group[data-section="bus"][data-state="degraded"] .health[data-state="degraded"]');
    await page.waitForSelector('#status-overall[data-state="degraded"]');
    expect(await page.textContent('.group[data-section="bus"] .reasons')).toMatch(/1 slow stream client dropped in the last 15 min/);
    expect(await page.textContent('#status-overall')).toMatch(/Degraded[\s\S]*Event bus and streams: 1 slow stream client dropped/);
    // The lines chart has drawn the storm, and moves with the next samples.
    await page.waitForSelector('figure.chart[data-panel="slow-clients"]:not([data-samples="0"])');
    const lines = page.locator('figure.chart[data-panel="lines"]');
    const last = (await lines.getAttribute('data-last')) ?? '';
    await page.waitForSelector(`figure.chart[data-panel="lines"]:not([data-last="${last}"])`);
    const next = Number(await lines.getAttribute('data-last'));
    expect(next).toBeGreaterThan(Number(last));
    const drawn = PNG.sync.read(await lines.locator('canvas').first().screenshot());
    expect(pixelsOf(drawn, FIRST_SERIES)).toBeGreaterThan(50);
    // For the README: the groups once the status was read after the storm began, and the charts
    // (in a window tall enough to hold them whole: a taller element is shot in pieces).
    await page.locator('.group[data-section="jobs"] .row', { hasText: /Started since start-up\s*4 jobs/ }).waitFor();
    // The job I/O thread: its nice value (CONSOLE_JOB_THREAD_NICE, 5 by default) and the lines it read.
    await page.locator('.group[data-section="jobs"] .row', { hasText: /Job I\/O thread’s CPU priority \(CONSOLE_JOB_THREAD_NICE\)\s*5 nice/ }).waitFor();
    await page.locator('.group[data-section="jobs"] .row', { hasText: /Lines read by the job I\/O thread\s*[1-9]/ }).waitFor();
    await page.$eval('body', () => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await screenshot(page, 'status-storm');
    await page.setViewportSize({ width: 1280, height: 1800 });
    await screenshot(page, 'status-charts', page.locator('section.charts'));
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('lays out without overflow or a figure broken over lines from 1024 to 1920 px', async () => {
    const check = () => layoutProblems(page, '.status-view', ['.card', '.chart', '.overall', 'main'], ['.figure', '.health']);
    for (const width of [1024, 1280, 1440, 1920]) {
      await page.setViewportSize({ width, height: 900 });
      // Each chart takes its box's new width when the resize is observed: wait for that, then
      // say what still overflows, if anything does.
      const found = await waitFor(async () => ((await check()).length === 0 ? [] : undefined), `a layout without overflow at ${width} px`).catch(check);
      expect(found, `at ${width} px`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('met no Content-Security-Policy refusal, script error or failed request', () => {
    expect(problems).toEqual([]);
  });
});

describe('the status view of a service that is not ready', () => {
  let other: TestService;
  afterAll(() => other?.close());

  it('says "degraded" with the failing check in words', async () => {
    other = await startTestService({ env: { DISPATCH_CLI: '/nonexistent/dispatch.js' } });
    const { page: p, problems: pr } = await openPage(browser);
    await p.goto(`${other.url}/#/status`);
    await p.waitForSelector('.group[data-section="readiness"][data-state="degraded"]');
    expect(await p.textContent('.group[data-section="readiness"] .reasons')).toMatch(/not ready: dispatchTool \(DISPATCH_CLI \/nonexistent\/dispatch\.js does not exist\)/);
    await p.waitForSelector('#status-overall[data-state="degraded"]');
    await p.close();
    // GET /api/ready's 503 is the answer the page reads, not a failure.
    expect(pr.filter((x) => !/status of 503/.test(x))).toEqual([]);
    expect(fs.existsSync('/nonexistent/dispatch.js')).toBe(false);
  });
});
