// The composition root (style.md, practice 2): guards, build (compose.ts), HTTP (http-server.ts), listen; shutdown.ts stops it.
import type http from 'node:http';
import { APP_VERSION, type Config } from '../config/config.js';
import { isLoopbackHost } from '../http/auth.js';
import type { AppDeps } from '../http/app.js';
import type { Api } from '../http/route.js';
import { checkStartupGuards, utcDate } from '../ops/guards.js';
import { createLogger, type Logger } from '../ops/logger.js';
import { allocator } from '../ops/memory.js';
import { SHIPPED_REGISTRIES, type Registries } from '../registry/index.js';
import type { Db } from '../state/sqlite/db.js';
import { composeService } from './compose.js';
import { buildHttp, listen } from './http-server.js';
import { shutdown } from './shutdown.js';

export interface ServiceOptions {
  /** Registries checked by the start-up guards; tests inject their own. */
  readonly registries?: Registries;
  /** Today's date (`YYYY-MM-DD`, UTC) for the guards; tests inject it. */
  readonly today?: string;
  /** A logger of the caller's, used as it is (no scrubbing but its own); else the service's (logger.ts). */
  readonly logger?: Logger;
  /** Called after a part the service cannot run without died (logged already); default: exit 1. */
  readonly onFatal?: (err: Error) => void;
}

/** The service cannot go on: one line on stderr, exit 1 (a supervisor restarts it; the restart marks its jobs lost). */
function exitOnFatal(err: Error): void {
  process.stderr.write(`console-backend: ${err.message}; exiting\n`);
  process.exit(1);
}

/** A running service. `close` performs the full shutdown and resolves when it is done. */
export interface Service {
  readonly url: string;
  readonly port: number;
  readonly server: http.Server;
  readonly deps: AppDeps;
  /** Every declared route (`api.routes`), as served and documented. */
  readonly api: Api;
  /** The embedded SQLite database; null in cluster mode. */
  readonly db: Db | null;
  close(): Promise<void>;
}

/** Starts the service, opening nothing when a guard fails. @throws StartupGuardError, ConfigError, StateDbError, or a listen error. */
export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = opts.logger ?? createLogger(config.logLevel, { secrets: config.secrets, format: config.logFormat });
  const guards = checkStartupGuards(opts.registries ?? SHIPPED_REGISTRIES, opts.today ?? utcDate());
  const { parts, abandon } = await composeService(config, log, opts.registries, opts.onFatal ?? exitOnFatal);
  let web: ReturnType<typeof buildHttp>;
  let bound: Awaited<ReturnType<typeof listen>>;
  try {
    web = buildHttp(parts, guards);
    bound = await listen(web.server, config.host, config.port);
  } catch (err) {
    await abandon();
    throw err;
  }
  parts.history.start();
  logStarted(parts, bound.url);
  let closing: Promise<void> | undefined;
  const httpParts = web;
  return {
    url: bound.url,
    port: bound.port,
    server: web.server,
    deps: web.deps,
    api: web.app.api,
    db: parts.backend.db,
    close: () => (closing ??= shutdown(parts, httpParts)),
  };
}

function logStarted(parts: Awaited<ReturnType<typeof composeService>>['parts'], url: string): void {
  const { config, log, backend, membership } = parts;
  log.info(
    {
      version: APP_VERSION,
      url,
      dataDir: config.dataDir,
      stateDir: config.stateDir,
      ...(membership ? { database: backend.status().url, instance: parts.instanceId } : { stateDb: config.stateDbPath }),
      dispatchCli: config.dispatchCli,
      // Read once here (/proc/self/maps), so that no request reads a file for it.
      allocator: allocator(),
      settings: config.nonDefault,
    },
    'console-backend listening',
  );
  if (config.writeUpstream !== null) log.info({ upstream: config.writeUpstream }, 'mutations are forwarded to the write upstream');
  if (config.apiToken === null && !isLoopbackHost(config.host)) {
    log.warn({ host: config.host }, 'listening beyond loopback without CONSOLE_API_TOKEN: every route is open to the network');
  }
}
