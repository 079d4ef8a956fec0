/**
 * A real browser for the ops page tests: Debian's chromium
 * driven by playwright-core. `.ci/run` installs chromium when it is missing; a test that cannot
 * launch it fails and says why (never skips).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type ConsoleMessage, type Locator, type Page } from 'playwright-core';
import { TEST_TIMEOUT_MS } from './ceilings.js';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** Where this run saves its screenshots: a temp folder of its own (the README's are copied from a run). */
let screenshots: string | undefined;

/**
 * Launches chromium.
 * @throws Error naming the cause and the fix when it is missing or does not start.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: the ops page tests need Debian's chromium (apt-get install -y chromium; .ci/run installs it)`);
  }
  try {
    return await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: TEST_TIMEOUT_MS - 10_000 });
  } catch (err) {
    throw new Error(`${CHROMIUM} could not be launched by playwright-core: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * A page that records what the browser refused or failed on: Content-Security-Policy
 * violations, uncaught errors, failed requests (read `problems` at the end of a test).
 * @param options.timezoneId the page's time zone (local times typed into the page are in it).
 */
export async function openPage(browser: Browser, options: { readonly timezoneId?: string } = {}): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, ...options });
  usePatience(page);
  const problems: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    // A failed load names its resource in the message's location, not in its text.
    const where = m.location().url;
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}${where ? ` (${where})` : ''}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // Requests in flight are aborted on purpose when a view closes its stream or the page navigates.
    if (r.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`);
  });
  return { page, problems };
}

/**
 * Saves a screenshot of `page` (or of one element of it, `of`) as `<name>.png` in this run's
 * temp folder (named on stdout); returns its path.
 */
export async function screenshot(page: Page, name: string, of?: Locator): Promise<string> {
  if (screenshots === undefined) {
    screenshots = fs.mkdtempSync(path.join(os.tmpdir(), 'console-ops-page-'));
    console.log(`ops page screenshots: ${screenshots}`);
  }
  const file = path.join(screenshots, `${name}.png`);
  if (of) await of.screenshot({ path: file });
  else await page.screenshot({ path: file });
  return file;
}

/**
 * Playwright's waits (30 s by default) last as long as a test may instead: a page on a loaded
 * machine renders late, not never, and a hang still fails, naming what was awaited.
 */
export function usePatience(page: Page): void {
  page.setDefaultTimeout(TEST_TIMEOUT_MS - 10_000);
  page.setDefaultNavigationTimeout(TEST_TIMEOUT_MS - 10_000);
}
