/**
 * A real nginx balancing over service instances, for the cluster tests (issue 13, "How it is
 * tested"): Debian's nginx, which `.ci/run` installs when missing. One process (no master, no
 * daemon), its files in a temp folder, a port of its own on the loopback; the configuration is
 * the README's cluster example (`proxy_buffering off` for the event stream).
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

export interface TestNginx {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** What nginx wrote to its error log so far. */
  errors(): string;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'];

/** The nginx configuration of a balancer over `upstreams` (`127.0.0.1:port` each), as the README shows it. */
export function balancerConfig(port: number, upstreams: readonly string[], dir: string): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream console {
${upstreams.map((u) => `    server ${u} max_fails=1 fail_timeout=5s;`).join('\n')}
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://console;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
    }
  }
}
`;
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
  const child: ChildProcess = spawn(bin, ['-p', dir, '-e', path.join(dir, 'error.log'), '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = once(child, 'exit');
  let gone = false;
  void exited.then(() => (gone = true));
  const errors = () => {
    try {
      return fs.readFileSync(path.join(dir, 'error.log'), 'utf8') + stderr;
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
        child.kill('SIGQUIT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
