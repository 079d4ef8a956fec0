/**
 * Requests to the instance that owns a job or terminal (cluster.md: "the owner is told through the database"):
 * notify `<owner> <key>`, the owner acknowledges `<key> done|not_running`, the asker waits `waitMs` (5 s).
 * Neither keys (checked ids) nor instance ids hold a space.
 */
import { OwnerNotAcknowledgedError } from './errors.js';

/** What the owner did: carried the request out, or found nothing running under the key. */
export type OwnerOutcome = 'done' | 'not_running';

export interface OwnerRequestsOptions {
  /** This instance's id. */
  readonly self: string;
  /** What is asked (`cancel`, `terminal stop`): named in the 504's detail. */
  readonly what: string;
  /** The request channel and the answer channel (plain identifiers). */
  readonly channel: string;
  readonly ackChannel: string;
  /** Sends a notification to every instance. */
  readonly notify: (channel: string, payload: string) => Promise<void>;
  /** The owner's side: carries a request for `key` out. Must not throw. */
  readonly handle: (key: string) => Promise<OwnerOutcome>;
  /** How long {@link OwnerRequests.ask} waits, ms (default 5000). */
  readonly waitMs?: number;
}

/** Both sides of one kind of owner request (see the module's comment). */
export class OwnerRequests {
  private readonly waiting = new Map<string, Set<(o: OwnerOutcome) => void>>();
  private readonly waitMs: number;

  constructor(private readonly options: OwnerRequestsOptions) {
    this.waitMs = options.waitMs ?? 5000;
  }

  /** The channels to listen on, with their handlers. */
  channels(): Record<string, (payload: string) => void> {
    return { [this.options.channel]: (p) => this.onRequest(p), [this.options.ackChannel]: (p) => this.onAck(p) };
  }

  /** Asks `owner` to carry the request for `key` out. @throws OwnerNotAcknowledgedError after `waitMs` unanswered; the notification's error. */
  ask(owner: string, key: string): Promise<OwnerOutcome> {
    return new Promise((resolve, reject) => {
      let waiters = this.waiting.get(key);
      if (!waiters) this.waiting.set(key, (waiters = new Set()));
      const set = waiters;
      const settle = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(key);
      };
      const done = (o: OwnerOutcome) => {
        settle();
        resolve(o);
      };
      const timer = setTimeout(() => {
        settle();
        reject(new OwnerNotAcknowledgedError(this.options.what, key, owner, this.waitMs));
      }, this.waitMs);
      set.add(done);
      this.options.notify(this.options.channel, `${owner} ${key}`).catch((err: unknown) => {
        settle();
        reject(err);
      });
    });
  }

  /** The owner's side. */
  private onRequest(payload: string): void {
    const [owner, key] = payload.split(' ');
    if (owner !== this.options.self || key === undefined) return;
    void this.options.handle(key).then((o) => this.options.notify(this.options.ackChannel, `${key} ${o}`).catch(() => {}));
  }

  /** The asker's side: an answer wakes the requests waiting for it. */
  private onAck(payload: string): void {
    const [key, outcome] = payload.split(' ');
    const waiters = this.waiting.get(key ?? '');
    if (!waiters || (outcome !== 'done' && outcome !== 'not_running')) return;
    for (const w of [...waiters]) w(outcome);
  }
}
