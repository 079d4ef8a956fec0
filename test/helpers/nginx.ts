/**
 * A real nginx balancing over service instances, for the cluster tests (cluster.md): Debian's nginx, which `.ci/run` installs when missing, run with the configuration the
 * README documents, deploy/nginx/console-cluster.conf, so the documented file is the tested one.
 * Only its paths (/tmp/cluster), its port (8430) and its upstream servers (127.0.0.1:8431-8433)
 * are replaced; one process group in the foreground, its files in a temp folder, a port of its
 * own on the loopback.
 *
 * Never skips: when nginx is not installed, {@link startNginx} throws, saying how to get it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './events.js';
import { freePort } from './process.js';
import { REPO_ROOT } from './service.js';

export interface TestNginx {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** What nginx wrote to its error log so far. */
  errors(): string;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'];

/** The README's nginx configuration for its local cluster. */
export const CLUSTER_CONF = path.join(REPO_ROOT, 'deploy', 'nginx', 'console-cluster.conf');

/** What the documented file holds that a test replaces: its folder, its port, its upstream servers. */
export const DOCUMENTED = { dir: '/tmp/cluster', port: 8430, upstreams: ['127.0.0.1:8431', '127.0.0.1:8432', '127.0.0.1:8433'] } as const;

/**
 * The documented configuration with another folder, port and upstream servers (`host:port`
 * each, keeping the documented server parameters). Rendering with {@link DOCUMENTED}'s values
 * gives the file back unchanged.
 * @throws Error when the file no longer has the parts replaced (its shape changed: fix both).
 */
export function balancerConfig(port: number, upstreams: readonly string[], dir: string): string {
  const text = fs.readFileSync(CLUSTER_CONF, 'utf8');
  const upstream = /( *)upstream console \{\n((?:.*\n)*?)\1\}/.exec(text);
  const listen = `listen 127.0.0.1:${DOCUMENTED.port};`;
  if (upstream === null || !text.includes(listen) || !text.includes(`${DOCUMENTED.dir}/`)) {
    throw new Error(`${CLUSTER_CONF} no longer has an "upstream console { … }" block, "${listen}" and paths under ${DOCUMENTED.dir}/: update test/helpers/nginx.ts with it`);
  }
  const indent = upstream[1] as string;
  const body = upstream[2] as string;
  const servers = [...body.matchAll(/^( *)server (\S+)( [^;]*)?;$/gm)];
  const first = servers[0];
  if (first === undefined || servers.map((m) => m[2]).join(',') !== DOCUMENTED.upstreams.join(','))
    throw new Error(`${CLUSTER_CONF}: the upstream's servers are not ${DOCUMENTED.upstreams.join(', ')}`);
  // The block's own lines (comments) stay; its servers become the given ones, with the same parameters.
  const kept = body.split('\n').filter((l) => !/^ *server /.test(l));
  const lines = [...kept.slice(0, -1), ...upstreams.map((u) => `${first[1]}server ${u}${first[3] ?? ''};`)];
  const block = `${indent}upstream console {\n${lines.join('\n')}\n${indent}}`;
  return text.replace(upstream[0], block).replace(listen, `listen 127.0.0.1:${port};`).replaceAll(`${DOCUMENTED.dir}/`, `${dir}/`);
}

/**
 * Starts nginx in front of `upstreams`.
 * @throws Error naming what is missing (nginx not installed) or nginx's own complaint.
 */
export async function startNginx(upstreams: readonly string[]): Promise<TestNginx> {
  const bin = CANDIDATES.find((p) => fs.existsSync(p));
  if (bin === undefined) throw new Error(`cannot start nginx for the cluster tests: none of ${CANDIDATES.join(', ')} exists (apt-get install nginx; .ci/run does it)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-test-nginx-'));
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(conf, balancerConfig(port, upstreams, dir));
  // Its own process group: the master and its worker are stopped together.
  const child: ChildProcess = spawn(bin, ['-p', `${dir}/`, '-e', path.join(dir, 'nginx-error.log'), '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = once(child, 'exit');
  let gone = false;
  void exited.then(() => (gone = true));
  const errors = () => {
    try {
      return fs.readFileSync(path.join(dir, 'nginx-error.log'), 'utf8') + stderr;
    } catch {
      return stderr;
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const up = await waitFor(
    async () => {
      if (gone) return false;
      try {
        await fetch(`${url}/api/health`);
        return true;
      } catch {
        return undefined;
      }
    },
    'nginx to answer',
    15_000,
  );
  if (!up) throw new Error(`nginx (${bin}) exited at start: ${errors()}`);
  return {
    url,
    errors,
    async stop() {
      if (!gone) {
        // SIGTERM: a fast shutdown (SIGQUIT would wait for the open event streams to end).
        const group = (signal: NodeJS.Signals) => {
          try {
            process.kill(-(child.pid as number), signal);
          } catch {
            // gone already
          }
        };
        group('SIGTERM');
        const timer = setTimeout(() => group('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
        group('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
