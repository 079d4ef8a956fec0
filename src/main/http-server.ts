// The HTTP phase of start-up: the app over the built parts (compose.ts), its server with the shutdown gate, and the listen.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createApp, type AppDeps, type CreatedApp } from '../http/app.js';
import { answerClientError } from '../http/client-error.js';
import { ShutdownGate } from '../http/shutdown-gate.js';
import { openDescriptors } from '../ops/descriptors.js';
import type { GuardReport } from '../ops/guards.js';
import type { Parts } from './compose.js';
import { hostForUrl } from './compose.js';

/** The server of one instance, not yet listening. */
export interface HttpParts {
  readonly deps: AppDeps;
  readonly app: CreatedApp;
  readonly server: http.Server;
  /** Once closed, late requests get a 503 and answers close their connection. */
  readonly gate: ShutdownGate;
}

/** Builds the app over `parts` and its server. */
export function buildHttp(parts: Parts, guards: GuardReport): HttpParts {
  const { config, backend } = parts;
  const deps: AppDeps = {
    descriptors: () => ({ ...parts.descriptors, open: openDescriptors() }),
    config,
    bus: backend.bus,
    sse: parts.sse,
    store: parts.store,
    supervisor: parts.supervisor,
    cancels: parts.cancels,
    pool: parts.pool,
    terminals: parts.terminalView,
    guards,
    startedAt: new Date(),
    metrics: parts.metrics,
    writeProxy: parts.writeProxy,
    console: parts.consoleState,
    database: backend,
    membership: parts.membership,
    readiness: parts.readiness,
    history: parts.history,
  };
  const gate = new ShutdownGate();
  const app = createApp(deps, { logger: parts.log, gate: gate.middleware });
  const server = http.createServer(app.serverOptions, app.handler);
  // CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: a client (a proxy) that keeps connections longer than the server reuses one as it closes.
  server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  const recorder = app.recorder;
  server.on('clientError', recorder === null ? answerClientError : (err: Error, socket: Duplex) => answerClientError(err, socket, (s, t, b) => recorder.recordRaw(s, t, b)));
  return { deps, app, server, gate };
}

/** Listens on HOST:PORT. @returns the port (with PORT=0, the system's choice) and base URL. @throws the listen error (EADDRINUSE…). */
export async function listen(server: http.Server, host: string, port: number): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return { port: bound, url: `http://${hostForUrl(host)}:${bound}` };
}
