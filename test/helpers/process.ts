/**
 * The compiled service as a separate process, for tests that kill it, signal it or read its
 * output (shutdown, crash, logs, reliability): started as `npm start` runs it, through
 * test/fixtures/gen-start-service.mjs (build first), on a free loopback port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import { waitFor } from './events.js';
import { TEST_SERVICE_ENV } from './ceilings.js';
import { fixture, recordingEnv } from './service.js';

/**
 * The child's exit code and signal, reported once its stdout and stderr ended too, at most `boundMs` (ms) after the
 * exit: Node may report an exit before the last lines were read from the pipes. A process the child left holding
 * them (the service's spawn helper, which leaves once the service is gone) is waited for that long at most. Call it
 * right after the spawn (it listens for the exit at once).
 */
export async function exitWithOutput(child: ChildProcess, boundMs = 5000): Promise<[number | null, NodeJS.Signals | null]> {
  const result = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)));
  const streams = [child.stdout, child.stderr].filter((s) => s !== null);
  await Promise.race([Promise.all(streams.map((s) => finished(s))).catch(() => {}), bound]);
  clearTimeout(timer);
  return result;
}

/** A loopback port free at the time of the call (the caller retries when it is taken meanwhile). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * setpriv's words that start a program as root without the capabilities that let root ignore
 * file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): permission bits then hold for it,
 * and it still reaches the project wherever it was cloned (an unprivileged user could not
 * cross a 0700 temp folder). setpriv execs the program: its pid is the program's.
 */
export const WITHOUT_FILE_OVERRIDE = ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--'] as const;

/**
 * Whether the service answering at `url` is the one on `stateDir` (its state database is
 * there). Another test's service may take the port a probe found free: it then answers
 * /api/health for ours, which exits with EADDRINUSE. Writes sent to it would land in another
 * database (a crash test once "lost" an acknowledged write that way).
 * @returns true for ours; undefined while nothing answers, or another service does.
 */
export async function answersFor(url: string, stateDir: string, token?: string, instanceId?: string): Promise<true | undefined> {
  try {
    const res = await fetch(`${url}/api/system-status`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    const status = (await res.json()) as { database?: { file?: string }; instance?: string | null };
    // Cluster mode has no database file of its own: the instance names itself.
    if (instanceId !== undefined) return status.instance === instanceId ? true : undefined;
    return status.database?.file?.startsWith(path.resolve(stateDir) + path.sep) ? true : undefined;
  } catch {
    return undefined;
  }
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Everything the service wrote on stderr so far. */
  stderr(): string;
  /** Everything the service wrote on stdout so far (its log lines). */
  stdout(): string;
}

/**
 * Starts the compiled service on a free port with `env` added to a minimal environment
 * (`LOG_LEVEL=silent` and one worker thread unless `env` says otherwise), and waits until it
 * answers, checked to be this service ({@link answersFor}). A port taken between the probe and the listen makes it exit 1:
 * another port is tried, three times at most.
 * @param cleanup registers a function that kills the process (run by the caller after the test).
 * @throws when the service exits during start-up, with its stderr.
 */
export async function startServiceProcess(store: { dataDir: string; stateDir: string }, env: Record<string, string>, cleanup: (fn: () => unknown) => void): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(process.execPath, [fixture('gen-start-service.mjs')], {
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        CONSOLE_DATA_DIR: store.dataDir,
        CONSOLE_STATE_DIR: store.stateDir,
        LOG_LEVEL: 'silent',
        CONSOLE_WORKER_THREADS: '1',
        ...recordingEnv(),
        ...TEST_SERVICE_ENV,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    let gone = false;
    child.once('exit', () => (gone = true));
    const exited = exitWithOutput(child);
    cleanup(() => {
      if (!gone) child.kill('SIGKILL');
    });
    const url = `http://127.0.0.1:${port}`;
    const up = await waitFor(async () => (gone ? false : answersFor(url, store.stateDir, env.CONSOLE_API_TOKEN)), 'the service process to answer');
    if (up) return { child, url, port, exited, stderr: () => err, stdout: () => out };
    if (attempt >= 3 || !err.includes('EADDRINUSE')) throw new Error(`service process exited at start-up: ${err}`);
  }
}
