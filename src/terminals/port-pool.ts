/** Terminal ports from CONSOLE_TTYD_PORTS: free of our terminals and passing a trial bind (other programs skip). */
import net from 'node:net';
import { TerminalPortsExhaustedError } from './errors.js';

export class PortPool {
  private readonly taken = new Set<number>();

  /** The range is inclusive; `probeHost` is the trial bind's address (the terminal's interface, or `0.0.0.0`). */
  constructor(
    readonly first: number,
    readonly last: number,
    private readonly probeHost: string,
  ) {}

  /** Reserves the lowest free port until {@link release}. @throws TerminalPortsExhaustedError when all are taken. */
  async reserve(): Promise<number> {
    for (let port = this.first; port <= this.last; port++) {
      if (this.taken.has(port)) continue;
      // Reserved before the (asynchronous) probe, so concurrent starts never pick the same port.
      this.taken.add(port);
      if (await isPortFree(this.probeHost, port)) return port;
      this.taken.delete(port);
    }
    throw new TerminalPortsExhaustedError(`no free terminal port in ${this.first}-${this.last} (${this.taken.size} held by terminals; CONSOLE_TTYD_PORTS)`);
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
