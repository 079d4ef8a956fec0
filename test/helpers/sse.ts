/**
 * A Server-Sent Events client for tests: reads the response body as a stream and parses
 * frames (`id:`, `data:`, `retry:`, comments) as they arrive.
 */
import { waitCeilingMs } from './ceilings.js';
import type { EngineEvent } from './events.js';

export interface SseFrame {
  id?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

export class SseClient {
  readonly frames: SseFrame[] = [];
  readonly events: EngineEvent[] = [];
  ended = false;
  status = 0;
  /** Why the stream ended, when it was not by its end (aborted, reset). */
  error: Error | undefined;
  /** Requests sent again after an unanswered failure on a closed keep-alive connection. */
  resent = 0;
  headers: Headers | undefined;
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  private buffer = '';
  readonly done: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.done = this.run(url, headers);
  }

  private async run(url: string, headers: Record<string, string>): Promise<void> {
    try {
      const res = await this.connect(url, headers);
      this.status = res.status;
      this.headers = res.headers;
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        this.parse();
      }
    } catch (err) {
      // Aborted, or reset by the server: said by `until` if a test waited for more.
      this.error = err as Error;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  /**
   * The request, sent again when it failed before any answer on a connection the server had closed:
   * fetch reuses an idle keep-alive connection, and one its server closes as it is reused (its idle
   * time-out) fails the request unanswered. Browsers send such a request again; so does this.
   */
  private async connect(url: string, headers: Record<string, string>): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetch(url, { headers, signal: this.controller.signal });
      } catch (err) {
        const code = ((err as Error).cause as { code?: string } | undefined)?.code;
        if (this.controller.signal.aborted || attempt === 3 || (code !== 'UND_ERR_SOCKET' && code !== 'ECONNRESET')) throw err;
        this.resent++;
        process.stderr.write(`sse: ${url} sent again after ${(err as Error).message} (${code})\n`);
      }
    }
  }

  private parse(): void {
    let idx: number;
    while ((idx = this.buffer.indexOf('\n\n')) !== -1) {
      const block = this.buffer.slice(0, idx);
      this.buffer = this.buffer.slice(idx + 2);
      const frame: SseFrame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comment = line.slice(1).trim();
        else if (line.startsWith('id: ')) frame.id = line.slice(4);
        else if (line.startsWith('data: ')) frame.data = (frame.data === undefined ? '' : `${frame.data}\n`) + line.slice(6);
        else if (line.startsWith('retry: ')) frame.retry = Number(line.slice(7));
      }
      this.frames.push(frame);
      if (frame.data !== undefined) this.events.push(JSON.parse(frame.data) as EngineEvent);
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  /** Resolves once `predicate` holds (checked on every frame); throws once the stream ended. `ceilingMs` as waitFor's (events.ts). */
  async until(predicate: (c: SseClient) => boolean, what = 'stream condition', ceilingMs = waitCeilingMs()): Promise<void> {
    const deadline = Date.now() + ceilingMs;
    while (!predicate(this)) {
      if (this.ended) {
        const why = this.error ? `: ${this.error.message}${this.error.cause ? ` (${(this.error.cause as Error).message})` : ''}` : '';
        throw new Error(`stream ended before ${what} (status ${this.status}, ${this.frames.length} frames${why})`);
      }
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  close(): void {
    this.controller.abort();
  }
}
