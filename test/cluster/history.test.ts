/**
 * The history in cluster mode: three instances on one real PostgreSQL behind the README's nginx
 * (deploy/nginx/console-cluster.conf), a token set on all. Whichever instance the balancer picks
 * answers `GET /api/system-status/history` with every live instance's history, each labelled
 * with its id (read from each instance at its recorded address, with the token); an instance
 * that does not answer is listed unreachable with the reason, and is back once it answers. In
 * the browser, through nginx, the charts draw a line per instance, and an instance that dies
 * turns the status view's Instances group "down" with the reason.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot } from '../helpers/browser.js';
import { waitFor } from '../helpers/events.js';
import { startNginx, type TestNginx } from '../helpers/nginx.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { fixture, SAMPLE_STORE } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';

const TOKEN = 'cluster-history-token-42';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface InstanceHistory {
  id: string | null;
  self: boolean;
  reachable: boolean;
  error: string | null;
  times: number[];
  series: Record<string, (number | null)[]>;
}

let pg: TestPostgres;
let tmp: string;
let lb: TestNginx;
let browser: Browser | undefined;
const instances = new Map<string, ServiceProcess>();

async function start(id: string, url: string, store: string): Promise<ServiceProcess> {
  const stateDir = path.join(tmp, `state-${id}`);
  fs.mkdirSync(stateDir, { recursive: true });
  const p = await startServiceProcess({
    env: {
      CONSOLE_DATABASE_URL: url,
      CONSOLE_INSTANCE_ID: id,
      CONSOLE_API_TOKEN: TOKEN,
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      DISPATCH_CLI: fixture('load-tool.mjs'),
      CONSOLE_HISTORY_SAMPLE_MS: '500',
      CONSOLE_KILL_GRACE_MS: '300',
    },
  });
  instances.set(id, p);
  return p;
}

const get = async <T>(url: string): Promise<T> => {
  const res = await fetch(url, { headers: AUTH });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};
const historyOf = (base: string) => get<{ instances: InstanceHistory[] }>(`${base}/api/system-status/history`);

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-history-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  pg = await startPostgres();
  const url = await pg.freshDatabase();
  await Promise.all(['a', 'b', 'c'].map((id) => start(id, url, store)));
  lb = await startNginx([...instances.values()].map((p) => `127.0.0.1:${p.port}`));
  await waitFor(async () => {
    const s = await get<{ instances: { alive: boolean }[] }>(`${lb.url}/api/system-status`);
    return s.instances.filter((i) => i.alive).length === 3 ? true : undefined;
  }, 'three live instances');
});

afterAll(async () => {
  await browser?.close();
  await lb?.stop();
  for (const p of instances.values()) {
    try {
      process.kill(p.child.pid as number, 'SIGCONT');
    } catch {
      // gone
    }
  }
  await Promise.all([...instances.values()].map((p) => p.stop()));
  await pg?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the history of a cluster', () => {
  it('answers, through nginx from whichever instance, every live instance’s history labelled with its id', async () => {
    const answeredBy = new Set<string>();
    await waitFor(async () => {
      const h = await historyOf(lb.url);
      expect(h.instances[0]?.self).toBe(true);
      expect(h.instances.filter((i) => i.self)).toHaveLength(1);
      expect(h.instances.map((i) => i.id).sort()).toEqual(['a', 'b', 'c']);
      for (const i of h.instances) expect(i, `${i.id}: ${i.error}`).toMatchObject({ reachable: true, error: null });
      answeredBy.add(h.instances[0]?.id as string);
      // Each has samples of its own: its own stream of times.
      return answeredBy.size >= 2 && h.instances.every((i) => i.times.length > 0) ? true : undefined;
    }, 'answers of two instances through nginx, every history with samples');
  });

  it('shows one instance’s load in the history another one answers', async () => {
    const b = instances.get('b') as ServiceProcess;
    const a = instances.get('a') as ServiceProcess;
    interface Job {
      state: string;
      exitReason: string | null;
      stdoutLines: number;
      stderrLines: number;
    }
    const res = await fetch(`${b.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ project: 'harbor-lights', shotId: 'flood5000' }),
    });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    let last: { instances: InstanceHistory[] } | undefined;
    try {
      await waitFor(async () => {
        const h = (last = await historyOf(a.url));
        const ofB = h.instances.find((i) => i.id === 'b');
        const ofA = h.instances.find((i) => i.id === 'a');
        return (ofB?.series.linesPerSecond ?? []).some((v) => (v ?? 0) > 0) && (ofA?.series.linesPerSecond ?? []).every((v) => (v ?? 0) === 0) ? true : undefined;
      }, 'b’s lines in the history a answers, and none in a’s own');
    } catch (err) {
      // Say what was seen: the job on b, b's own history, and the last answer of a.
      const job = await get<unknown>(`${b.url}/api/jobs/${proposalId}`).catch((e: Error) => e.message);
      const own = await historyOf(`${b.url}`).catch((e: Error) => e.message);
      const brief = (h: { instances: InstanceHistory[] } | string | undefined) =>
        typeof h === 'object'
          ? JSON.stringify(h.instances.map((i) => ({ id: i.id, self: i.self, reachable: i.reachable, error: i.error, samples: i.times.length, linesPerSecond: i.series.linesPerSecond })))
          : String(h);
      throw new Error(`${(err as Error).message}\njob on b: ${JSON.stringify(job)}\nb's own history: ${brief(own)}\nlast answer of a: ${brief(last)}`);
    }
    // Every line counted: a short job once lost all it printed while its launch was recorded.
    const job = await waitFor(async () => {
      const j = await get<Job>(`${b.url}/api/jobs/${proposalId}`);
      return j.state === 'running' ? undefined : j;
    }, `the end of ${proposalId}`);
    expect(job).toMatchObject({ state: 'exited ok', stdoutLines: 5000, stderrLines: 500 });
  });

  it('lists an instance that does not answer as unreachable, with the reason, and reads it again once it answers', async () => {
    const a = instances.get('a') as ServiceProcess;
    const c = instances.get('c') as ServiceProcess;
    // Stopped (not dead: its heartbeat is younger than CONSOLE_INSTANCE_TIMEOUT_MS, 10 s).
    process.kill(c.child.pid as number, 'SIGSTOP');
    try {
      const h = await historyOf(a.url);
      expect(h.instances.find((i) => i.id === 'c')).toMatchObject({
        reachable: false,
        times: [],
        error: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:${c.port}/api/system-status/history\\?scope=instance: no answer within 2000 ms$`)),
      });
      expect(
        h.instances
          .filter((i) => i.reachable)
          .map((i) => i.id)
          .sort(),
      ).toEqual(['a', 'b']);
    } finally {
      process.kill(c.child.pid as number, 'SIGCONT');
    }
    await waitFor(async () => ((await historyOf(a.url)).instances.find((i) => i.id === 'c')?.reachable ? true : undefined), 'c read again');
  });

  it('draws a line per instance in the browser, through nginx; an instance that dies turns the Instances group "down"', async () => {
    browser = await launchBrowser();
    const { page, problems } = await openPage(browser);
    await page.goto(`${lb.url}/#/status`);
    await page.waitForSelector('#token-dialog[open]');
    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('.group[data-section="instances"][data-state="ok"]');
    const labels = (p: Page, panel: string) => p.$$eval(`figure.chart[data-panel="${panel}"] .u-legend .u-series .u-label`, (els) => els.map((e) => (e.textContent ?? '').trim()));
    await waitFor(async () => ((await labels(page, 'running-jobs')).join(',') === 'Time,a,b,c' ? true : undefined), 'a line per instance on the running-jobs chart');
    expect(await labels(page, 'events')).toEqual(['Time', 'stored · a', 'delivered · a', 'stored · b', 'delivered · b', 'stored · c', 'delivered · c']);
    await screenshot(page, 'cluster-charts', page.locator('section.charts'));

    const c = instances.get('c') as ServiceProcess;
    process.kill(c.child.pid as number, 'SIGKILL');
    await c.exited;
    await page.waitForSelector('.group[data-section="instances"][data-state="down"]', { timeout: 60_000 });
    expect(await page.textContent('.group[data-section="instances"] .reasons')).toMatch(/instance c stopped beating .* ago: its running jobs were marked lost/);
    await page.waitForSelector('#status-overall[data-state="down"]');
    // The page's own event stream may have been on c: cut, it resumes through another instance.
    expect(problems.filter((p) => !p.includes('/api/events/stream'))).toEqual([]);
  });
});
