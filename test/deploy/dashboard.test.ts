/**
 * The Grafana dashboard of the monitoring kit (deploy/grafana/console-backend.json) against a
 * real Prometheus (Debian's `prometheus`, on loopback, in a temp folder) configured with the
 * kit's own prometheus.yml (its targets, intervals and paths replaced for the test; the token
 * read from a credentials file, as documented) scraping a real service process under a small
 * load: jobs printing lines, a stream client, reads. Every panel's query returns data; the
 * panels are the ops page's charts, under the same titles; the alerting rules load and evaluate
 * without error on the real series.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { waitFor } from '../helpers/events.js';
import { freePort } from '../helpers/process.js';
import { fixture, REPO_ROOT, SAMPLE_STORE } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';
import { SseClient } from '../helpers/sse.js';
import { requireTool } from '../helpers/tools.js';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
const TOKEN = 'dashboard-test-token-5d1c';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Panel {
  id: number;
  title: string;
  datasource: { uid: string };
  targets: { refId: string; expr: string; legendFormat: string }[];
}
const dashboard = JSON.parse(fs.readFileSync(path.join(DEPLOY, 'grafana', 'console-backend.json'), 'utf8')) as { panels: Panel[]; templating: { list: { name: string }[] } };

/** A panel's query as Prometheus takes it: Grafana's variables given values (every instance, a 30 s rate window). */
const asQuery = (expr: string) => expr.replaceAll('$__rate_interval', '30s').replaceAll('$instance', '.*');

let tmp: string;
let svc: ServiceProcess;
let prometheus: ChildProcess | undefined;
let promUrl: string;
let promLog = '';
let stream: SseClient | undefined;
let loading = true;
let load: Promise<void> = Promise.resolve();

beforeAll(async () => {
  const binary = requireTool('prometheus', 'the dashboard test runs a real Prometheus (Debian’s prometheus package: apt-get install prometheus; .ci/run installs it)');
  const promtool = requireTool('promtool', 'Debian’s prometheus package (apt-get install prometheus; .ci/run installs it)');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-dashboard-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  svc = await startServiceProcess({
    env: {
      CONSOLE_API_TOKEN: TOKEN,
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: path.join(tmp, 'state'),
      DISPATCH_CLI: fixture('load-tool.mjs'),
      LOAD_LINES: '300',
      CONSOLE_HISTORY_SAMPLE_MS: '1000',
    },
  });
  // The kit's configuration, as documented, with this test's target, token file, rules and a 1 s interval.
  const config = YAML.parse(fs.readFileSync(path.join(DEPLOY, 'prometheus', 'prometheus.yml'), 'utf8')) as {
    global: Record<string, string>;
    rule_files: string[];
    scrape_configs: { job_name: string; metrics_path: string; honor_labels: boolean; static_configs: { targets: string[] }[]; authorization: { type: string; credentials_file: string } }[];
  };
  const job = config.scrape_configs[0];
  expect(job).toMatchObject({ job_name: 'console-backend', metrics_path: '/api/metrics', honor_labels: true, authorization: { type: 'Bearer' } });
  expect(config.rule_files).toEqual(['console-backend.rules.yml']);
  const tokenFile = path.join(tmp, 'console-backend.token');
  fs.writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  config.global = { ...config.global, scrape_interval: '1s', evaluation_interval: '1s' };
  config.rule_files = [path.join(DEPLOY, 'prometheus', 'console-backend.rules.yml')];
  job!.static_configs = [{ targets: [`127.0.0.1:${svc.port}`] }];
  job!.authorization.credentials_file = tokenFile;
  const configFile = path.join(tmp, 'prometheus.yml');
  fs.writeFileSync(configFile, YAML.stringify(config));
  const check = spawnSync(promtool, ['check', 'config', configFile], { encoding: 'utf8' });
  expect(check.status, check.stdout + check.stderr).toBe(0);

  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(binary, [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(tmp, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  prometheus.stderr?.setEncoding('utf8').on('data', (d: string) => (promLog += d));
  let gone = false;
  void once(prometheus, 'exit').then(() => (gone = true));
  await waitFor(async () => {
    if (gone) throw new Error(`prometheus exited at start: ${promLog}`);
    try {
      return (await fetch(`${promUrl}/-/ready`)).ok ? true : undefined;
    } catch {
      return undefined;
    }
  }, 'Prometheus to be ready');

  // A small load until the test ends: a job every turn (300 lines each), reads, a stream client.
  stream = new SseClient(`${svc.url}/api/events/stream`, AUTH);
  load = (async () => {
    while (loading) {
      await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ project: 'harbor-lights' }) });
      for (const p of ['/api/projects', '/api/projects/harbor-lights', '/api/jobs?limit=20', '/api/system-status']) await (await fetch(`${svc.url}${p}`, { headers: AUTH })).arrayBuffer();
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
});

afterAll(async () => {
  loading = false;
  await load.catch(() => undefined);
  stream?.close();
  if (prometheus && prometheus.exitCode === null) {
    const exited = once(prometheus, 'exit');
    prometheus.kill('SIGTERM');
    await exited;
  }
  await svc?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** A Prometheus instant query's result. */
async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data?.result ?? [];
}

describe('the Grafana dashboard on a real Prometheus', () => {
  it('has the ops page’s charts as its panels, each on the Prometheus data source, filtered by instance', async () => {
    const { PANELS } = (await import(pathToFileURL(path.join(REPO_ROOT, 'src', 'ops-page', 'chart-panels.js')).href)) as { PANELS: { title: string }[] };
    expect(dashboard.panels.map((p) => p.title)).toEqual(PANELS.map((p) => p.title));
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['instance']);
    for (const p of dashboard.panels) {
      expect(p.datasource.uid, p.title).toBe('${DS_PROMETHEUS}');
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) expect(t.expr, p.title).toContain('instance=~"$instance"');
    }
  });

  it('scrapes the service with the token file, and every panel’s query returns data', async () => {
    await waitFor(async () => {
      const r = (await (await fetch(`${promUrl}/api/v1/targets`)).json()) as { data: { activeTargets: { health: string; labels: Record<string, string> }[] } };
      return r.data.activeTargets.some((x) => x.health === 'up' && x.labels.job === 'console-backend') ? true : undefined;
    }, 'the service’s target to be up');
    const pending = new Map(dashboard.panels.flatMap((p) => p.targets.map((t) => [`${p.title} ${t.refId}`, asQuery(t.expr)] as const)));
    const last = new Map<string, string>();
    await waitFor(
      async () => {
        for (const [name, expr] of pending) {
          const result = await query(expr);
          last.set(name, JSON.stringify(result).slice(0, 300));
          // Data: a series, with a number (a quantile of nothing is NaN).
          if (result.some((r) => Number.isFinite(Number(r.value[1])))) pending.delete(name);
        }
        return pending.size === 0 ? true : undefined;
      },
      'every panel’s query to return data',
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; still without data: ${[...pending.keys()].map((k) => `${k} (${last.get(k)})`).join('; ')}; prometheus: ${promLog}`);
    });
    // The load shows: lines printed, events stored and delivered to the one client.
    expect(Number((await query('console_job_output_lines_total'))[0]?.value[1])).toBeGreaterThan(0);
    expect(Number((await query('console_sse_events_delivered_total'))[0]?.value[1])).toBeGreaterThan(0);
  });

  it('loads the alerting rules and evaluates each on the real series without error', async () => {
    const rules = await waitFor(async () => {
      const r = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; lastError?: string; lastEvaluation: string }[] }[] } };
      const all = r.data.groups.flatMap((g) => g.rules);
      return all.length > 0 && all.every((x) => !x.lastEvaluation.startsWith('0001')) ? all : undefined;
    }, 'the rules to be evaluated');
    expect(rules).toHaveLength(9);
    for (const r of rules) expect({ name: r.name, health: r.health, lastError: r.lastError ?? '' }).toEqual({ name: r.name, health: 'ok', lastError: '' });
  });
});
