/**
 * Starts the real service for a test: a temp copy of the sample store (or an empty store),
 * a temp state directory with a real SQLite file, port 0 on loopback.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventBus } from '../../src/bus/bus.js';
import type { BusEvent, EventInput } from '../../src/bus/event.js';
import { readConfig, type Config } from '../../src/config/config.js';
import { startService, type Service, type ServiceOptions } from '../../src/main/service.js';
import { TEST_SERVICE_ENV } from './ceilings.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SAMPLE_STORE = path.join(REPO_ROOT, 'sample-store');
export const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures');
export const DISPATCH_TOOL = path.join(REPO_ROOT, 'dist', 'dispatch', 'cli.js');

/**
 * The variable that makes a service record its answers (CONSOLE_RECORD_ANSWERS_DIR), set by the
 * global set-up (answers-setup.ts), for the environment of every service a test starts: their
 * answers are checked against the OpenAPI document at the end of the run. Empty when unset.
 */
export function recordingEnv(): Record<string, string> {
  const dir = process.env.CONSOLE_RECORD_ANSWERS_DIR;
  return dir ? { CONSOLE_RECORD_ANSWERS_DIR: dir } : {};
}

/** Path of a fixture script under test/fixtures. */
export const fixture = (name: string) => path.join(FIXTURES, name);

export interface TestService {
  readonly url: string;
  readonly service: Service;
  readonly config: Config;
  readonly dataDir: string;
  readonly stateDir: string;
  /** Root of the temp directory (store and state below it). */
  readonly tmp: string;
  get(pathAndQuery: string, init?: RequestInit): Promise<Response>;
  post(pathAndQuery: string, body?: unknown, init?: RequestInit): Promise<Response>;
  /** Stops the service (full shutdown) and keeps the temp dirs. */
  stop(): Promise<void>;
  /** Stops the service and removes the temp dirs. */
  close(): Promise<void>;
}

export interface TestServiceOptions extends ServiceOptions {
  /** Extra environment variables for readConfig. */
  readonly env?: Record<string, string>;
  /** `sample` (default) copies sample-store; `empty` creates an empty store; else an existing dir. */
  readonly store?: 'sample' | 'empty' | { readonly dir: string };
  /** Reuse this temp root (restart on the same state dir). */
  readonly tmp?: string;
}

/** Makes a temp root with a store copy; returns its paths. */
export function makeTempStore(kind: 'sample' | 'empty' = 'sample'): { tmp: string; dataDir: string; stateDir: string } {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-test-'));
  const dataDir = path.join(tmp, 'store');
  if (kind === 'sample') fs.cpSync(SAMPLE_STORE, dataDir, { recursive: true });
  else fs.mkdirSync(path.join(dataDir, 'projects'), { recursive: true });
  return { tmp, dataDir, stateDir: path.join(tmp, 'state') };
}

export async function startTestService(opts: TestServiceOptions = {}): Promise<TestService> {
  let tmp: string;
  let dataDir: string;
  if (opts.tmp) {
    tmp = opts.tmp;
    dataDir = path.join(tmp, 'store');
  } else if (opts.store && typeof opts.store === 'object') {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-test-'));
    dataDir = opts.store.dir;
  } else {
    ({ tmp, dataDir } = makeTempStore(opts.store ?? 'sample'));
  }
  const stateDir = path.join(tmp, 'state');
  const config = readConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    CONSOLE_DATA_DIR: dataDir,
    CONSOLE_STATE_DIR: stateDir,
    DISPATCH_CLI: DISPATCH_TOOL,
    CONSOLE_WORKER_THREADS: '1',
    CONSOLE_KILL_GRACE_MS: '2000',
    LOG_LEVEL: 'silent',
    PATH: process.env.PATH ?? '',
    ...recordingEnv(),
    ...TEST_SERVICE_ENV,
    ...opts.env,
  });
  const service = await startService(config, opts);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await service.close();
  };
  return {
    url: service.url,
    service,
    config,
    dataDir,
    stateDir,
    tmp,
    get: (p, init) => fetch(service.url + p, init),
    post: (p, body, init) =>
      fetch(service.url + p, {
        method: 'POST',
        body: body === undefined ? undefined : JSON.stringify(body),
        ...init,
        // After `init`, so extra headers add to the JSON content type instead of replacing it.
        headers: { 'content-type': 'application/json', ...Object.fromEntries(new Headers(init?.headers).entries()) },
      }),
    stop,
    close: async () => {
      await stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** Resolves once every event published on `t` before is stored (on the event writer thread, with SQLite). */
export async function storedOn(t: { service: Service }): Promise<void> {
  const bus = t.service.deps.bus;
  if (!(bus instanceof EventBus)) throw new Error('storedOn: the service runs on the cluster bus, which stores at commit');
  await bus.whenStored();
}

/**
 * Publishes an event on a service's bus and returns it with its id: the embedded SQLite bus
 * hands ids out at publish (the cluster's bus does not, and is refused here).
 */
export function publishOn(t: { service: Service }, input: EventInput): BusEvent {
  const bus = t.service.deps.bus;
  if (!(bus instanceof EventBus)) throw new Error('publishOn: the service runs on the cluster bus, whose ids are assigned at commit');
  return bus.publish(input);
}
