/**
 * Ports for terminals from the configured range (CONSOLE_TTYD_PORTS). A port is handed out
 * when no terminal of ours holds it and a trial bind on the terminal's interface succeeds, so
 * ports taken by other programs (or by terminals left over from an earlier run) are skipped.
 */
import net from 'node:net';
import { TerminalPortsExhaustedError } from './errors.js';

export class PortPool {
  private readonly taken = new Set<number>();

  /**
   * @param first first port of the range (inclusive).
   * @param last last port of the range (inclusive).
   * @param probeHost address the trial bind uses: the terminal's interface, or `0.0.0.0`.
   */
  constructor(
    readonly first: number,
    readonly last: number,
    private readonly probeHost: string,
  ) {}

  /**
   * Reserves the lowest free port of the range until {@link release}.
   * @throws TerminalPortsExhaustedError when every port is taken.
   */
  async reserve(): Promise<number> {
    for (let port = this.first; port <= this.last; port++) {
      if (this.taken.has(port)) continue;
      // Reserved before the (asynchronous) probe, so concurrent starts never pick the same port.
      this.taken.add(port);
      if (await isPortFree(this.probeHost, port)) return port;
      this.taken.delete(port);
    }
    throw new TerminalPortsExhaustedError(
      `no free terminal port in ${this.first}-${this.last} (${this.taken.size} held by terminals; CONSOLE_TTYD_PORTS)`,
    );
  }

  release(port: number): void {
    this.taken.delete(port);
  }
}

/** True when a listening socket can be bound to `host:port` right now. */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** True when something accepts a TCP connection on `host:port`. */
export function acceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
