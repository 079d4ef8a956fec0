/**
 * The alerting rules of the monitoring kit (deploy/prometheus/console-backend.rules.yml), checked
 * with the real tool: `promtool check rules`, then `promtool test rules` on their unit tests, in
 * which every alert is shown firing and not firing (checked here from the test file itself); and
 * every family the rules read is one the service exposes (a typo would make an alert that never
 * fires). promtool is Debian's `prometheus` package, which .ci/run installs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { REPO_ROOT, startTestService, type TestService } from '../helpers/service.js';
import { requireTool } from '../helpers/tools.js';

const DIR = path.join(REPO_ROOT, 'deploy', 'prometheus');
const RULES = path.join(DIR, 'console-backend.rules.yml');
const TESTS = path.join(DIR, 'console-backend.rules.test.yml');
/** Families only a cluster-mode instance exposes (its peers). */
const CLUSTER_ONLY = new Set(['console_cluster_peer_up']);

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
}
interface RuleTest {
  alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[];
}

const promtool = () => requireTool('promtool', 'the alerting rules are checked with promtool (Debian’s prometheus package: apt-get install prometheus; .ci/run installs it)');
const run = (args: string[]) => spawnSync(promtool(), args, { cwd: DIR, encoding: 'utf8', timeout: 120_000 });
const rules = (): Rule[] => (YAML.parse(fs.readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(() => t?.close());

describe('the alerting rules', () => {
  it('page for what an operator is paged for', () => {
    expect(rules().map((r) => r.alert)).toEqual([
      'ConsoleInstanceDown',
      'ConsoleEventLoopDelayHigh',
      'ConsoleStateDatabaseUnreachable',
      'ConsoleJobOutputHeld',
      'ConsoleSlowStreamClientsDropped',
      'ConsoleJobsLost',
      'ConsoleHttp5xxRate',
      'ConsoleNotReady',
      'ConsoleClusterInstanceMissing',
    ]);
    for (const r of rules()) expect(['critical', 'warning'], r.alert).toContain(r.labels?.severity);
  });

  it('pass promtool check rules', () => {
    const r = run(['check', 'rules', RULES]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${rules().length} rules found`);
  });

  it('pass their unit tests (promtool test rules), which show every alert firing and not firing', () => {
    const r = run(['test', 'rules', TESTS]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
    const cases = (YAML.parse(fs.readFileSync(TESTS, 'utf8')) as { tests: RuleTest[] }).tests.flatMap((x) => x.alert_rule_test ?? []);
    for (const { alert } of rules()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} is shown firing`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} is shown not firing`,
      ).toBe(true);
    }
  });

  it('read only families the service exposes', async () => {
    const scrape = await (await t.get('/api/metrics')).text();
    const exposed = new Set([...scrape.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
    const read = new Set(rules().flatMap((r) => [...r.expr.matchAll(/\b(console_[a-z_]+?)(?:_bucket|_count|_sum)?\{/g)].map((m) => m[1] as string)));
    expect(read.size).toBeGreaterThan(5);
    for (const family of read) if (!CLUSTER_ONLY.has(family)) expect(exposed, family).toContain(family);
  });
});
