/**
 * The ops page with CONSOLE_API_TOKEN set, in a real browser (it asks for the token once): the page loads without the token, asks for
 * it, refuses a wrong one, then works, its event stream included; a reload does not ask again.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, usePatience } from '../helpers/browser.js';
import { fixture, startTestService, type TestService, publishOn } from '../helpers/service.js';

const TOKEN = 'ops-page-token-7f3a';

let t: TestService;
let browser: Browser;
let page: Page;
let problems: string[];

beforeAll(async () => {
  const first = 20_000 + Math.floor(Math.random() * 500) * 20;
  t = await startTestService({
    env: {
      CONSOLE_API_TOKEN: TOKEN,
      TTYD_BIN: fixture('ttyd-standin.mjs'),
      TTYD_COMMAND: JSON.stringify([process.execPath, fixture('forever.mjs')]),
      CONSOLE_TTYD_PORTS: `${first}-${first + 9}`,
      CONSOLE_TTYD_READY_MS: '60000',
    },
  });
  browser = await launchBrowser();
  ({ page, problems } = await openPage(browser));
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the ops page with a token', () => {
  it('loads without the token, asks for it once, refuses a wrong one, then works', async () => {
    await page.goto(`${t.url}/#/status`);
    await page.waitForSelector('#token-dialog[open]');
    expect(await page.isHidden('#token-error')).toBe(true);

    await page.fill('#token-input', 'not-the-token');
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#token-dialog[open] #token-error:not([hidden])');

    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#token-dialog:not([open])', { state: 'attached' });
    await page.waitForSelector('.card[data-section="limits"]');
    // The stream carries the token too (fetch with Authorization: EventSource could not).
    await page.waitForSelector('#stream-state[data-state="live"]');
    const published = publishOn(t, { severity: 'warning', scope: 'ops/token', summary: 'seen through the token' });
    await page.click('#nav a[data-view="events"]');
    await page.waitForSelector(`#event-rows tr[data-id="${published.id}"]`);
  });

  it('opens a terminal, which asks for its own credential, from its link on the page', async () => {
    await page.click('#nav a[data-view="terminals"]');
    await page.waitForSelector('section.terminals-view form.launch');
    await page.click('section.terminals-view form.launch button[type="submit"]');
    // A locator, not an element handle: the view may draw its table again between the wait and the click.
    const link = page.locator('section.terminals-view td a[href]').first();
    await link.waitFor();
    // The link carries the credential the API handed out behind the token: the terminal opens.
    const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    usePatience(tab);
    // The new tab starts at about:blank, whose load may be the one seen: wait for the terminal's page itself.
    await tab.waitForSelector('text=cwd:');
    expect(await tab.textContent('body')).toContain('cwd:');
    await tab.close();
    // Without it, the same terminal refuses.
    const href = (await link.getAttribute('href')) as string;
    const bare = new URL(href);
    bare.username = '';
    bare.password = '';
    expect((await fetch(bare.toString())).status).toBe(401);
    await page.click('#nav a[data-view="events"]');
  });

  it('keeps the token for the tab: a reload does not ask again', async () => {
    await page.reload();
    // The events view whichever view the test before left open.
    await page.click('#nav a[data-view="events"]');
    await page.waitForSelector('#stream-state[data-state="live"]');
    await page.waitForSelector('#event-rows tr');
    expect(await page.$('#token-dialog[open]')).toBeNull();
    expect(await page.isVisible('#forget-token')).toBe(true);
  });

  it('renders the API docs (/api/docs) from the service alone, without the token', async () => {
    const fresh = await openPage(browser);
    try {
      await fresh.page.goto(`${t.url}/api/docs`);
      await fresh.page.waitForSelector('#operations-Service-health');
      // The job routes are in the document too.
      await fresh.page.waitForSelector('#operations-Generation-listJobEvents');
      expect(fresh.problems).toEqual([]);
    } finally {
      await fresh.page.close();
    }
  });

  it('met no Content-Security-Policy refusal, script error or failed request', () => {
    expect(problems).toEqual([]);
  });
});
