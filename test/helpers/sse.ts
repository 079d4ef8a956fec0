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
      const res = await fetch(url, { headers, signal: this.controller.signal });
      this.status = res.status;
      this.headers = res.headers;
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        this.parse();
      }
    } catch {
      // aborted or reset by the server
    } finally {
      this.ended = true;
      this.wake();
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
      if (this.ended) throw new Error(`stream ended before ${what}`);
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
