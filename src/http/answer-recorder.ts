// Records every answer to check against the OpenAPI document, only with CONSOLE_RECORD_ANSWERS_DIR (the tests):
// `doc-<key>.json` per document and an `answers-*.jsonl` per instance, one `write` per line so a SIGKILL loses
// only answers in flight.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import type { Request, RequestHandler } from 'express';

/** JSON bodies larger than this are recorded without their body (bytes counted). */
export const BODY_CAP = 4 * 1024 * 1024;

/** Route label of answers written outside Express (client-error.ts). */
export const CLIENT_ERROR_ROUTE = '(client error)';

/** One recorded answer, as a line's meta. */
export interface RecordedMeta {
  /** `-` for a request Node's parser refused. */
  readonly m: string;
  /** Route template (`/api/projects/:projectId`), `(unmatched)`, or {@link CLIENT_ERROR_ROUTE}. */
  readonly r: string;
  readonly s: number;
  /** Content-Type, or null. */
  readonly t: string | null;
  /** Bytes of the body sent. */
  readonly n: number;
  /** The answer's headers, by lower-cased name (the document requires some: Allow, ETag…). */
  readonly h?: Readonly<Record<string, string>>;
  /** The write upstream's answer, to match its own document, not this instance's. */
  readonly u?: true;
}

let instances = 0;

/** The recorder of one service instance. */
export class AnswerRecorder {
  private readonly file: string;
  private fd: number | null = null;
  private docKey: string | null = null;

  /** @param dir the folder of CONSOLE_RECORD_ANSWERS_DIR (created when missing). */
  constructor(private readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, `answers-${process.pid}-${++instances}-${randomBytes(4).toString('hex')}.jsonl`);
  }

  /** Names the document answers are checked against, writing it (via a renamed temporary) unless its key's file exists. */
  useDocument(key: string, render: () => object): void {
    const target = path.join(this.dir, `doc-${key}.json`);
    if (!fs.existsSync(target)) {
      const tmp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(render()));
      fs.renameSync(tmp, target);
    }
    this.docKey = key;
  }

  /** The middleware; register it first, so every answer is seen (421s, 401s, the shutdown's 503, forwarded ones). */
  middleware(routeOf: (req: Request) => string, isUpstreamAnswer: (res: ServerResponse) => boolean = () => false): RequestHandler {
    return (req, res, next) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let capped = false;
      const keep = (chunk: unknown, encoding?: unknown): void => {
        if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
        const b = Buffer.isBuffer(chunk)
          ? chunk
          : typeof chunk === 'string'
            ? Buffer.from(chunk, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding)
            : Buffer.from(chunk as Uint8Array);
        bytes += b.length;
        if (capped || !isJson(res)) return;
        if (bytes > BODY_CAP) {
          capped = true;
          chunks.length = 0;
          return;
        }
        chunks.push(b);
      };
      const write = res.write;
      const end = res.end;
      const writeHead = res.writeHead;
      // Headers given to writeHead alone (the shutdown gate's) are not readable with getHeader.
      res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
        for (const a of args) if (a !== null && typeof a === 'object' && !Array.isArray(a)) given(res, a as Record<string, unknown>);
        return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
      } as typeof res.writeHead;
      res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
        keep(chunk, rest[0]);
        return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
      } as typeof res.write;
      res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
        keep(chunk, rest[0]);
        return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
      } as typeof res.end;
      res.once('close', () => {
        // A client that left before any answer got none: nothing to check.
        if (!res.headersSent) return;
        const body = res.writableFinished && !capped && isJson(res) && req.method !== 'HEAD' ? Buffer.concat(chunks).toString('utf8') : '';
        this.write({ m: req.method, r: routeOf(req), s: res.statusCode, t: contentType(res), n: bytes, ...headersOf(res), ...(isUpstreamAnswer(res) ? { u: true } : {}) }, body);
      });
      next();
    };
  }

  /** Records an answer written outside Express (client-error.ts). */
  recordRaw(status: number, type: string, body: string): void {
    this.write({ m: '-', r: CLIENT_ERROR_ROUTE, s: status, t: type, n: Buffer.byteLength(body) }, body);
  }

  /** Closes the file (service shutdown). */
  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }

  private write(meta: RecordedMeta, body: string): void {
    if (this.fd === null) {
      this.fd = fs.openSync(this.file, 'a');
      fs.writeSync(this.fd, `${JSON.stringify({ doc: this.docKey })}\n`);
    }
    // JSON holds raw line breaks only as whitespace: one line per answer whatever its layout.
    fs.writeSync(this.fd, `${JSON.stringify(meta)}\t${body.replace(/[\r\n]/g, ' ')}\n`);
  }
}

/** Headers passed to `writeHead`, by lower-cased name. */
const GIVEN = Symbol('headers given to writeHead');
type WithGiven = ServerResponse & { [GIVEN]?: Record<string, string> };

function given(res: ServerResponse, headers: Record<string, unknown>): void {
  const out: Record<string, string> = ((res as WithGiven)[GIVEN] ??= {});
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = String(v);
}

function header(res: ServerResponse, name: string): string | undefined {
  const v = res.getHeader(name) ?? (res as WithGiven)[GIVEN]?.[name];
  return v === undefined ? undefined : String(v);
}

function contentType(res: ServerResponse): string | null {
  return header(res, 'content-type') ?? null;
}

function isJson(res: ServerResponse): boolean {
  return /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType(res) ?? '');
}

function headersOf(res: ServerResponse): { h?: Record<string, string> } {
  const h: Record<string, string> = { ...(res as WithGiven)[GIVEN] };
  for (const [name, v] of Object.entries(res.getHeaders())) if (v !== undefined) h[name] = Array.isArray(v) ? v.join(', ') : String(v);
  return Object.keys(h).length === 0 ? {} : { h };
}
