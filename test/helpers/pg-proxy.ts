/**
 * A TCP proxy between service instances and the tests' PostgreSQL that can freeze an
 * instance's database traffic at an exact point of the protocol: what a paused or partitioned
 * instance does to the database, but placed deterministically (a SIGSTOP lands wherever the
 * instance happens to be).
 *
 * It reads the client's side of the PostgreSQL wire protocol only as far as framing goes: the
 * startup message (a length, no type byte), then messages of a type byte and a length. Once
 * {@link PgProxy.freezeAfter} is armed, the first request whose messages contain the given text
 * is forwarded whole (an extended-protocol request up to its Sync, or a simple Query), and then
 * nothing more from any client connection reaches the server until {@link PgProxy.thaw}: the
 * server sees a client that went silent right there. The server's side always flows, and is
 * framed too: the freeze is reported once the server answered that request (ReadyForQuery).
 */
import { once } from 'node:events';
import net from 'node:net';

export interface PgProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** `url` (a database URL of the server) through the proxy. */
  via(url: string): string;
  /**
   * Freezes every connection's client-to-server traffic right after the first request that
   * contains one of `texts` has been forwarded whole. Resolves once frozen.
   */
  freezeAfter(...texts: string[]): Promise<void>;
  /** Freezes every connection's client-to-server traffic now. */
  freeze(): void;
  /** Forwards what was held, in order, and lets traffic flow again. */
  thaw(): void;
  /** Whether client-to-server traffic is frozen. */
  readonly frozen: boolean;
  /** Closes the proxy and every connection through it. */
  close(): Promise<void>;
}

/** One client connection's framing state and held bytes. */
interface Link {
  readonly client: net.Socket;
  readonly server: net.Socket;
  /** Bytes of a message not complete yet. */
  partial: Buffer;
  started: boolean;
  /** Whole messages held while frozen. */
  held: Buffer[];
  /** Bytes of a server message not complete yet. */
  serverPartial: Buffer;
  /** Called at the server's next ReadyForQuery on this connection. */
  onReady: (() => void) | null;
}

/**
 * Starts a proxy on a free loopback port that forwards to 127.0.0.1:`serverPort`.
 * @throws when it cannot listen.
 */
export async function startPgProxy(serverPort: number): Promise<PgProxy> {
  const links = new Set<Link>();
  let frozen = false;
  let armed: { texts: Buffer[]; matched: boolean; done: () => void } | null = null;

  const forward = (link: Link, msg: Buffer): void => {
    if (frozen) {
      link.held.push(msg);
      return;
    }
    link.server.write(msg);
    if (armed === null) return;
    if (armed.texts.some((t) => msg.includes(t))) armed.matched = true;
    // The request ends with a Sync (extended protocol) or is one Query (simple protocol).
    const type = String.fromCharCode(msg[0] as number);
    if (armed.matched && (type === 'S' || type === 'Q')) {
      frozen = true;
      // Reported once the server has run the request and answered it.
      link.onReady = armed.done;
      armed = null;
    }
  };

  /** Frames the server's messages (type byte and length) to see its ReadyForQuery ('Z'). */
  const onServerData = (link: Link, chunk: Buffer): void => {
    link.client.write(chunk);
    if (link.onReady === null) return;
    let buf = link.serverPartial.length > 0 ? Buffer.concat([link.serverPartial, chunk]) : chunk;
    while (buf.length >= 5) {
      const len = buf.readInt32BE(1) + 1;
      if (buf.length < len) break;
      if (buf[0] === 0x5a && link.onReady !== null) {
        const done = link.onReady;
        link.onReady = null;
        done();
      }
      buf = buf.subarray(len);
    }
    link.serverPartial = link.onReady === null ? Buffer.alloc(0) : Buffer.from(buf);
  };

  const onClientData = (link: Link, chunk: Buffer): void => {
    let buf = link.partial.length > 0 ? Buffer.concat([link.partial, chunk]) : chunk;
    for (;;) {
      if (!link.started) {
        if (buf.length < 4) break;
        const len = buf.readInt32BE(0);
        if (buf.length < len) break;
        link.server.write(buf.subarray(0, len)); // the startup message is never held
        buf = buf.subarray(len);
        link.started = true;
        continue;
      }
      if (buf.length < 5) break;
      const len = buf.readInt32BE(1) + 1;
      if (buf.length < len) break;
      forward(link, Buffer.from(buf.subarray(0, len)));
      buf = buf.subarray(len);
    }
    link.partial = Buffer.from(buf);
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(serverPort, '127.0.0.1');
    // Small messages go out at once (Nagle would hold the tail of a request back).
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const link: Link = { client, server: upstream, partial: Buffer.alloc(0), started: false, held: [], serverPartial: Buffer.alloc(0), onReady: null };
    links.add(link);
    client.on('data', (d: Buffer) => onClientData(link, d));
    upstream.on('data', (d: Buffer) => onServerData(link, d));
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    via: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    freezeAfter: (...texts) =>
      new Promise<void>((resolve) => {
        armed = { texts: texts.map((t) => Buffer.from(t, 'utf8')), matched: false, done: resolve };
      }),
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      armed = null;
      for (const link of links) {
        const held = link.held;
        link.held = [];
        for (const msg of held) link.server.write(msg);
      }
    },
    get frozen() {
      return frozen;
    },
    close: async () => {
      for (const link of links) {
        link.client.destroy();
        link.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
