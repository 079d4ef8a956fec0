/**
 * The ops page in a real browser: chromium driven by
 * playwright-core against the real service on port 0, a real dispatch stand-in that prints a
 * line every 100 ms until it is cancelled. Waits are for selectors, never for times.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventInput } from '../../src/bus/event.js';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { waitFor } from '../helpers/events.js';
import { fixture, startTestService, type TestService, publishOn } from '../helpers/service.js';

/** Rows the event tail keeps (src/ops-page/events-view.js). */
const MAX_ROWS = 500;

let t: TestService;
let browser: Browser;
let page: Page;
let problems: string[];

beforeAll(async () => {
  // A kill grace never reached: the cancelled job ends by SIGTERM once it runs (Node's handler
  // re-raises it), which on a loaded machine can take longer than a second.
  t = await startTestService({
    env: { DISPATCH_CLI: fixture('ev-lines.mjs'), EV_LINES: '100000', EV_BATCH: '1', EV_INTERVAL_MS: '100', CONSOLE_KILL_GRACE_MS: '60000' },
  });
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const publish = (input: EventInput) => publishOn(t, input);

/** Rows of the event tail: their id, severity and scope. */
const tailRows = () => page.$$eval('#event-rows tr', (rows) => rows.map((r) => ({ id: r.getAttribute('data-id'), severity: r.getAttribute('data-severity'), scope: r.getAttribute('data-scope') })));

/**
 * Waits until every row of the event tail has `attr` equal to `value` (with `not`: none has).
 * Selectors only: the page's Content-Security-Policy refuses evaluated strings.
 */
const waitRows = (attr: string, value: string, not = false) => page.waitForSelector(`#event-rows tr${not ? '' : ':not('}[${attr}="${value}"]${not ? '' : ')'}`, { state: 'detached' });

/** Waits until the element of `selector` has a text matching `text`. */
const waitText = (selector: string, text: RegExp | string) => page.locator(selector, { hasText: text }).first().waitFor();

describe('the ops page', () => {
  let jobId: string;

  it('launches a job from the jobs page and shows it among the running jobs, live', async () => {
    await page.goto(`${t.url}/`);
    await page.waitForSelector('#stream-state[data-state="live"]');
    await page.waitForSelector('form.launch select option[value="harbor-lights"]', { state: 'attached' });
    await page.selectOption('form.launch select', 'harbor-lights');
    await page.click('form.launch button[type="submit"]');
    const link = await page.waitForSelector('.notice a[href^="#/jobs/gen_"]');
    jobId = ((await link.getAttribute('href')) as string).slice('#/jobs/'.length);
    // The list follows the job's spawn event on the page's stream, and its lines' counts.
    await page.waitForSelector(`.job-group[data-state="running"] tr[data-id="${jobId}"]`);
    await waitText(`tr[data-id="${jobId}"] .lines`, /^([3-9]|\d{2,}) \//);
    await screenshot(page, 'jobs-page');
  });

  it('opens the job’s page: argv, times, state, and its output lines as they arrive', async () => {
    await page.click(`tr[data-id="${jobId}"] a[href="#/jobs/${jobId}"]`);
    await page.waitForSelector('#job-facts[data-state="running"]');
    expect(await page.textContent('#job-facts')).toContain(fixture('ev-lines.mjs'));
    await page.waitForSelector('#job-output li[data-line="3"]');
    // Later lines come in on the stream while the page is open.
    const shown = await page.$$eval('#job-output li[data-line]', (lis) => lis.length);
    await page.waitForSelector(`#job-output li[data-line="${shown + 3}"]`);
    const texts = await page.$$eval('#job-output li[data-line]', (lis) => lis.map((li) => li.textContent));
    expect(texts.slice(0, 5)).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);
    expect(await page.isEnabled('#cancel-job')).toBe(true);
    await screenshot(page, 'job-page');
  });

  it('cancels the job from its button and shows it ended, cancelled', async () => {
    await page.click('#cancel-job');
    await page.waitForSelector('#job-facts[data-state="exited failed"]');
    await page.waitForSelector('#job-outcome[data-value="cancelled"]');
    await page.waitForSelector('#job-output li.meta.failure');
    expect(await page.textContent('#job-output li.meta.failure')).toMatch(/^dispatch_cli exited rc=143/);
    expect(await page.isDisabled('#cancel-job')).toBe(true);
    const job = (await (await t.get(`/api/jobs/${jobId}`)).json()) as { state: string; cancelRequested: boolean; signal: string };
    expect(job).toMatchObject({ state: 'exited failed', cancelRequested: true, signal: 'SIGTERM' });
    await screenshot(page, 'job-page-cancelled');
    // Back on the jobs page, it is listed among the failed ones.
    await page.click('a[href="#/jobs"]');
    await page.waitForSelector(`#jobs-page tr[data-id="${jobId}"][data-state="exited failed"]`);
  });

  it('filters the event tail by severity and by scope, live too', async () => {
    await page.goto(`${t.url}/#/events`);
    await page.waitForSelector('#event-rows tr');
    publish({ severity: 'warning', scope: 'ops/alpha', summary: 'alpha warning 1' });
    publish({ severity: 'info', scope: 'ops/alpha', summary: 'alpha info 1' });
    publish({ severity: 'warning', scope: 'ops/beta', summary: 'beta warning 1' });
    await page.waitForSelector('#event-rows tr[data-scope="ops/beta"]');

    // Severity: only warnings.
    for (const s of ['info', 'success', 'failure', 'fallback']) await page.uncheck(`input[name="severity"][value="${s}"]`);
    await page.waitForSelector('section.events-view[data-filters="warning|"]');
    await waitRows('data-severity', 'warning');
    // The filtered tail is fetched again: no row at all also satisfies the wait above, and a row of the read before
    // (one per checkbox unchecked) may stand until the last read's rows replace the table.
    const warnings = await waitFor(async () => {
      const rows = await tailRows();
      return rows.some((r) => r.scope === 'ops/beta') && rows.every((r) => r.severity === 'warning') ? rows : undefined;
    }, 'the tail to show the warnings alone');
    expect(warnings.map((r) => r.severity)).toEqual(expect.arrayContaining(['warning']));

    // Scope prefix: only ops/alpha, and live events are filtered the same way.
    await page.fill('input[name="scopePrefix"]', 'ops/alpha');
    await page.waitForSelector('section.events-view[data-filters="warning|ops/alpha"]');
    await waitRows('data-scope', 'ops/alpha');
    await page.waitForSelector('#event-rows tr[data-scope="ops/alpha"]');
    publish({ severity: 'warning', scope: 'ops/beta', summary: 'beta warning 2' });
    publish({ severity: 'info', scope: 'ops/alpha', summary: 'alpha info 2' });
    const last = publish({ severity: 'warning', scope: 'ops/alpha', summary: 'alpha warning 2' });
    await page.waitForSelector(`#event-rows tr[data-id="${last.id}"]`);
    const rows = await tailRows();
    expect(rows.every((r) => r.scope === 'ops/alpha' && r.severity === 'warning')).toBe(true);
    expect(await page.$$eval('#event-rows td.summary', (tds) => tds.map((td) => td.textContent))).toEqual(['alpha warning 2', 'alpha warning 1']);
  });

  it('pauses and resumes the tail', async () => {
    await page.click('#pause-events');
    const held = publish({ severity: 'warning', scope: 'ops/alpha', summary: 'held while paused' });
    await waitText('#tail-status', '1 new event held');
    expect(await page.$(`#event-rows tr[data-id="${held.id}"]`)).toBeNull();
    await page.click('#pause-events');
    await page.waitForSelector(`#event-rows tr[data-id="${held.id}"]`);
  });

  it('stays usable with 10,000 events streaming in: rows bounded, controls answer', async () => {
    await page.fill('input[name="scopePrefix"]', '');
    for (const s of ['info', 'success', 'failure', 'fallback']) await page.check(`input[name="severity"][value="${s}"]`);
    await page.waitForSelector('section.events-view[data-filters="info,success,failure,warning,fallback|"]');
    let last = '';
    const severities = ['info', 'warning', 'success', 'failure', 'fallback'] as const;
    // 10,000 events in bursts of 500, each burst in one turn of the service's event loop.
    for (let burst = 0; burst < 20; burst++) {
      for (let i = 0; i < 500; i++) {
        const n = burst * 500 + i;
        last = publish({ severity: severities[n % 5] as (typeof severities)[number], scope: `load/${n % 7}`, summary: `flood ${n}`, detail: `event ${n} of 10000` }).id;
      }
      await new Promise((r) => setImmediate(r));
    }
    await page.waitForSelector(`#event-rows tr[data-id="${last}"]`);
    const count = await page.$$eval('#event-rows tr', (rows) => rows.length);
    expect(count).toBeLessThanOrEqual(MAX_ROWS);
    expect(count).toBeGreaterThan(100);
    // Newest first, in order.
    const ids = (await tailRows()).slice(0, 50).map((r) => Number(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    // The page still answers: a filter applies, and pause works.
    await page.uncheck('input[name="severity"][value="info"]');
    await waitRows('data-severity', 'info', true);
    await page.click('#pause-events');
    await waitText('#tail-status', /^paused/);
    await page.click('#pause-events');
  });

  it('shows the service status and the terminals', async () => {
    await page.goto(`${t.url}/#/status`);
    for (const section of ['service', 'jobs', 'bus', 'workers', 'cache', 'guards', 'writeProxy', 'limits']) {
      await page.waitForSelector(`.card[data-section="${section}"]`);
    }
    expect(await page.textContent('.card[data-section="limits"]')).toContain('CONSOLE_EVENT_RETENTION');
    await page.click('#nav a[data-view="terminals"]');
    await page.waitForSelector('section.terminals-view form.launch');
    await waitText('section.terminals-view', 'No terminal has been started');
  });

  it('met no Content-Security-Policy refusal, script error or failed request', () => {
    expect(problems).toEqual([]);
  });
});
