/**
 * The jobs view at scale, in a real browser: 10,000 jobs in the history (CONSOLE_JOB_HISTORY's
 * default), shown one page of 100 rows at a time, newest first; Older and Newer page through
 * them; the filters by state, project and start time narrow the list (and a job started now is
 * in "the last hour" and among the running); a job's page links to its events in the event
 * view, which shows that job's events alone, live. The page never holds more than a page of
 * history rows, whatever the history's length.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { layoutProblems } from '../helpers/layout.js';
import { newestFirst, seededJobs, seededStart, seedJobs } from '../helpers/job-history.js';
import { fixture, publishOn, startTestService, type TestService } from '../helpers/service.js';

const N = 10_000;
const PAGE = 100;
const seeded = seededJobs(N);
const order = [...seeded].sort(newestFirst);

let t: TestService;
let browser: Browser;
let page: Page;
let problems: string[];
let running: string;

beforeAll(async () => {
  t = await startTestService({ env: { DISPATCH_CLI: fixture('ev-lines.mjs'), EV_LINES: '100000', EV_BATCH: '1', EV_INTERVAL_MS: '200', CONSOLE_KILL_GRACE_MS: '1000' } });
  seedJobs(t, seeded);
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser, { timezoneId: 'UTC' }));
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** The rows of the history's page: id, state, project. */
const rows = () => page.$$eval('#jobs-page tbody tr', (trs) => trs.map((tr) => ({ id: tr.getAttribute('data-id'), state: tr.getAttribute('data-state'), project: tr.getAttribute('data-project') })));
const waitRange = (text: string | RegExp) => page.locator('#jobs-range', { hasText: text }).waitFor();

describe('the jobs view with 10,000 jobs in the history', () => {
  it('shows the newest page of 100 rows, and pages through the history with Older and Newer', async () => {
    await page.goto(`${t.url}/#/jobs`);
    await waitRange('Page 1: jobs 1–100, newest first');
    const first = await rows();
    expect(first).toHaveLength(PAGE);
    expect(first.map((r) => r.id)).toEqual(order.slice(0, PAGE).map((j) => j.proposalId));
    for (let p = 2; p <= 4; p++) {
      await page.click('#jobs-older');
      await waitRange(`Page ${p}: jobs ${(p - 1) * PAGE + 1}–${p * PAGE}`);
    }
    const fourth = await rows();
    expect(fourth.map((r) => r.id)).toEqual(order.slice(3 * PAGE, 4 * PAGE).map((j) => j.proposalId));
    // Only the page is on the page: 100 history rows, whatever the history's length.
    expect(await page.$$eval('#job-history tbody tr', (trs) => trs.length)).toBe(PAGE);
    await page.click('#jobs-newer');
    await waitRange('Page 3: jobs 201–300');
    expect((await rows()).map((r) => r.id)).toEqual(order.slice(2 * PAGE, 3 * PAGE).map((j) => j.proposalId));
    await screenshot(page, 'jobs-history');
    // A page of the history fits from 1024 px: nothing wider than the window, no date broken over lines.
    for (const width of [1024, 1920]) {
      await page.setViewportSize({ width, height: 860 });
      expect(await layoutProblems(page, '.jobs-view', ['main'], ['.badge', 'td.nowrap']), `at ${width} px`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('filters by state and project, from the newest page again', async () => {
    for (const s of ['running', 'exited failed', 'exited ok']) await page.uncheck(`#job-filters input[name="state"][value="${s}"]`);
    await page.waitForSelector('#job-filters[data-filters="state=lost"]');
    await waitRange('Page 1: jobs 1–100');
    await page.waitForSelector('#jobs-page tbody tr:not([data-state="lost"])', { state: 'detached' });
    const lost = order.filter((j) => j.state === 'lost');
    expect((await rows()).map((r) => r.id)).toEqual(lost.slice(0, PAGE).map((j) => j.proposalId));
    await page.selectOption('#job-filters select[name="projectId"]', 'night-market');
    await page.waitForSelector('#job-filters[data-filters="state=lost&projectId=night-market"]');
    await page.waitForSelector('#jobs-page tbody tr:not([data-project="night-market"])', { state: 'detached' });
    await page.waitForSelector('#jobs-page tbody tr');
    expect((await rows()).map((r) => r.id)).toEqual(
      lost
        .filter((j) => j.projectId === 'night-market')
        .slice(0, PAGE)
        .map((j) => j.proposalId),
    );
    // A window typed in the page's local time (UTC here): jobs 2,000 to 2,599 started in it.
    await page.selectOption('#job-filters select[name="window"]', 'custom');
    await page.fill('#job-filters input[name="from"]', seededStart(2000).slice(0, 19));
    await page.fill('#job-filters input[name="to"]', seededStart(2600).slice(0, 19));
    await page.waitForSelector(`#job-filters[data-filters*="to="]`);
    const inWindow = lost.filter((j) => j.projectId === 'night-market' && j.startedAt >= seededStart(2000) && j.startedAt < seededStart(2600));
    await page.waitForSelector(`#jobs-page tbody tr[data-id="${inWindow[0]?.proposalId}"]`);
    await page.waitForSelector(`#jobs-range:has-text("jobs 1–${inWindow.length},")`);
    expect((await rows()).map((r) => r.id)).toEqual(inWindow.map((j) => j.proposalId));
    expect(await page.isDisabled('#jobs-older')).toBe(true);
  });

  it('shows a job started now among the running and in the last hour; its page links to its events, shown alone and live', async () => {
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
    running = ((await res.json()) as { proposalId: string }).proposalId;
    await page.waitForSelector(`.job-group[data-state="running"] tr[data-id="${running}"]`);
    for (const s of ['running', 'exited failed', 'exited ok']) await page.check(`#job-filters input[name="state"][value="${s}"]`);
    await page.selectOption('#job-filters select[name="projectId"]', '');
    await page.selectOption('#job-filters select[name="window"]', '1h');
    await page.waitForSelector(`#jobs-page tbody tr[data-id="${running}"][data-state="running"]`);
    expect((await rows()).map((r) => r.id)).toEqual([running]);

    await page.click(`#jobs-page tr[data-id="${running}"] a[href="#/jobs/${running}"]`);
    await page.waitForSelector('#job-facts[data-state="running"]');
    await page.click('#job-events-link');
    await page.waitForSelector(`section.events-view[data-proposal="${running}"]`);
    expect(new URL(page.url()).hash).toBe(`#/events?proposalId=${running}`);
    await page.waitForSelector('#event-rows tr');
    // Another event is not shown; the job's next lines are, as they come.
    const other = publishOn(t, { severity: 'warning', scope: 'ops/other', summary: 'not about the job' });
    const shown = await page.$$eval('#event-rows tr', (trs) => trs.length);
    await page.waitForSelector(`#event-rows tr:nth-child(${shown + 2})`);
    expect(await page.$(`#event-rows tr[data-id="${other.id}"]`)).toBeNull();
    const details = await page.$$eval('#event-rows tr', (trs) =>
      trs.map((tr) => ({ scope: tr.getAttribute('data-scope'), detail: tr.querySelector('td.detail')?.textContent ?? '', summary: tr.querySelector('td.summary')?.textContent ?? '' })),
    );
    for (const d of details) expect(d.scope).toBe('engine/generation');
    expect(details.filter((d) => d.detail.startsWith(`${running} stdout line`)).length).toBeGreaterThan(2);
    expect(details.some((d) => d.summary.startsWith('dispatch_cli spawned'))).toBe(true);
    await t.post(`/api/jobs/${running}/cancel`);
  });

  it('met no Content-Security-Policy refusal, script error or failed request', () => {
    expect(problems).toEqual([]);
  });
});
