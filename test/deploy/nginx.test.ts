/**
 * The nginx configuration of the README's cluster section (deploy/nginx/console-cluster.conf):
 * the README runs this file and embeds no other; the cluster tests run it through
 * test/helpers/nginx.ts, which replaces only its folder, port and upstream servers (rendered
 * with the documented values, the file comes back unchanged); `nginx -t` accepts it; and in front
 * of a real service an event stream goes through it as it is written (proxy_buffering off).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balancerConfig, CLUSTER_CONF, DOCUMENTED, startNginx, type TestNginx } from '../helpers/nginx.js';
import { publishOn, REPO_ROOT, startTestService, type TestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';
import { requireTool } from '../helpers/tools.js';

let t: TestService;
let lb: TestNginx;
beforeAll(async () => {
  t = await startTestService();
  lb = await startNginx([`127.0.0.1:${t.service.port}`]);
});
afterAll(async () => {
  await lb?.stop();
  await t?.close();
});

describe('the cluster’s nginx configuration', () => {
  it('is the one the README runs, and the README embeds no other', () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const cluster = readme.slice(readme.indexOf('### Cluster mode'), readme.indexOf('## Tests and benchmarks'));
    expect(cluster).toContain('nginx -e /tmp/cluster/nginx-error.log -c "$PWD/deploy/nginx/console-cluster.conf"');
    expect(cluster).not.toMatch(/proxy_pass|upstream console/);
  });

  it('is only re-pathed, re-ported and given other servers by the tests: rendered with its own values it is unchanged', () => {
    expect(balancerConfig(DOCUMENTED.port, DOCUMENTED.upstreams, DOCUMENTED.dir)).toBe(fs.readFileSync(CLUSTER_CONF, 'utf8'));
    const rendered = balancerConfig(9999, ['127.0.0.1:1', '127.0.0.1:2'], '/x');
    expect(rendered).toContain('    server 127.0.0.1:1 max_fails=1 fail_timeout=5s;\n    server 127.0.0.1:2 max_fails=1 fail_timeout=5s;\n  }');
    expect(rendered).toContain('listen 127.0.0.1:9999;');
    expect(rendered).not.toContain('/tmp/cluster/');
  });

  it('passes nginx -t', () => {
    const nginx = requireTool('nginx', 'the cluster tests run nginx (apt-get install nginx; .ci/run installs it)');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-nginx-t-'));
    try {
      const conf = path.join(dir, 'nginx.conf');
      fs.writeFileSync(conf, balancerConfig(DOCUMENTED.port, DOCUMENTED.upstreams, dir));
      const r = spawnSync(nginx, ['-t', '-p', `${dir}/`, '-e', path.join(dir, 'nginx-error.log'), '-c', conf], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/syntax is ok/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes an event stream through as it is written, and reads', async () => {
    expect((await fetch(`${lb.url}/api/health`)).status).toBe(200);
    const client = new SseClient(`${lb.url}/api/events/stream`);
    try {
      await client.until((c) => c.status === 200, 'the stream open through nginx');
      const e = publishOn(t, { severity: 'info', scope: 'test/nginx', summary: 'through the balancer' });
      await client.until((c) => c.events.some((x) => x.id === e.id), 'the event through nginx');
    } finally {
      client.close();
    }
    expect(lb.errors()).not.toMatch(/\[(error|crit|alert|emerg)\]/);
  });
});
