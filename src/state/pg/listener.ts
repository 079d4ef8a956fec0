// The LISTEN side of cluster mode (cluster.md, "Events"): one dedicated connection per instance, reopened with
// back-off. PostgreSQL keeps no notifications for a disconnected listener, so `onConnected` runs on every
// (re)connection for its owner to read what it missed.
import pg from 'pg';

/** What a listener does with the notifications of each channel, and with its connection's state. */
export interface PgListenerOptions {
  readonly url: string;
  /** Handlers by channel name (constants of this code, never from a request). */
  readonly channels: Readonly<Record<string, (payload: string) => void>>;
  /** Runs once the connection listens, first and after every reconnection. */
  readonly onConnected?: () => void;
  /** Told when the connection is lost (it is then opened again). */
  readonly onLost?: (err: Error) => void;
  /** Longest wait between reconnection attempts, ms (default 2000). */
  readonly maxBackoffMs?: number;
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]*$/;

/** A connection that listens on fixed channels. */
export class PgListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private listening = false;

  constructor(private readonly options: PgListenerOptions) {}

  /** Whether the connection listens now. */
  get connected(): boolean {
    return this.listening;
  }

  /** Opens the connection; resolves once it listens, or after the first failure (it retries on its own). */
  async start(): Promise<void> {
    for (const ch of Object.keys(this.options.channels)) {
      if (!CHANNEL_NAME.test(ch)) throw new Error(`PgListener: channel name ${JSON.stringify(ch)} is not a plain identifier`);
    }
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.options.url, connectionTimeoutMillis: 5000 });
    this.client = client;
    let lost = false;
    const onLost = (err: Error) => {
      if (lost) return;
      lost = true;
      this.listening = false;
      if (this.client === client) this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.stopped) return;
      this.options.onLost?.(err);
      const wait = Math.min(this.options.maxBackoffMs ?? 2000, 100 * 2 ** this.attempt++);
      this.timer = setTimeout(() => void this.connect(), wait);
      this.timer.unref();
    };
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the listening connection ended')));
    client.on('notification', (m) => this.options.channels[m.channel]?.(m.payload ?? ''));
    try {
      await client.connect();
      for (const ch of Object.keys(this.options.channels)) await client.query(`LISTEN ${ch}`);
    } catch (err) {
      onLost(err as Error);
      return;
    }
    if (lost || this.stopped) return;
    this.attempt = 0;
    this.listening = true;
    this.options.onConnected?.();
  }

  /** Closes the connection; no more reconnections. */
  async close(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }
}
