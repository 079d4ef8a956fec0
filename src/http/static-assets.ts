/**
 * Fixed static files of the ops page and docs viewer, served from memory (read and gzipped once,
 * ETag of the content). Only files listed up front are served: nothing from a request reaches a path.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Request, Response } from 'express';

const gzip = promisify(zlib.gzip);

/** Content types by extension; a file of another kind is not served. */
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** Smaller bodies are sent as they are: compressing them saves nothing worth the header. */
const GZIP_MIN_BYTES = 1024;

/** Headers of the page's and viewer's answers: a strict CSP, no sniffing, framing or referrer; `no-cache`, so an upgrade shows at once. */
export function securityHeaders(csp: string): Readonly<Record<string, string>> {
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-cache',
  };
}

/** The page's and viewer's policy: this origin only (Swagger UI's DOM-set styles are allowed). */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Loaded {
  readonly body: Buffer;
  readonly gzipped: Buffer | null;
  readonly type: string;
  readonly etag: string;
}

export class StaticAssets {
  private readonly files = new Map<string, string>();
  private readonly loaded = new Map<string, Promise<Loaded>>();

  /**
   * @param files URL path (`/ops/app.js`) → absolute file path, fixed here.
   * @throws Error for a file whose extension has no content type (a programming error).
   */
  constructor(files: Iterable<readonly [string, string]>) {
    for (const [url, file] of files) {
      if (TYPES[path.extname(file)] === undefined) throw new Error(`no content type for ${file}`);
      this.files.set(url, file);
    }
  }

  /** Whether `urlPath` (exact, case-sensitive) is one of the files. */
  has(urlPath: string): boolean {
    return this.files.has(urlPath);
  }

  /** URL paths of every file. */
  get paths(): readonly string[] {
    return [...this.files.keys()];
  }

  /**
   * Answers the file at `urlPath` with `headers`: 200 (gzipped when the client accepts it), or
   * 304 when `If-None-Match` names its ETag; HEAD gets the headers only.
   * @throws Error when the file cannot be read (an installation fault: a 500).
   */
  async send(req: Request, res: Response, urlPath: string, headers: Readonly<Record<string, string>>): Promise<void> {
    const file = this.files.get(urlPath);
    if (file === undefined) throw new Error(`not a static asset: ${urlPath}`);
    let loading = this.loaded.get(urlPath);
    if (loading === undefined) {
      loading = load(file);
      this.loaded.set(urlPath, loading);
      // A failed read is tried again by the next request.
      loading.catch(() => this.loaded.delete(urlPath));
    }
    const asset = await loading;
    res.set(headers);
    res.setHeader('ETag', asset.etag);
    if (asset.gzipped) res.setHeader('Vary', 'Accept-Encoding');
    if (fresh(req.get('if-none-match'), asset.etag)) {
      res.status(304).end();
      return;
    }
    const gz = asset.gzipped !== null && /\bgzip\b/i.test(req.get('accept-encoding') ?? '');
    const body = gz ? (asset.gzipped as Buffer) : asset.body;
    res.status(200).type(asset.type);
    if (gz) res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Length', String(body.length));
    if (req.method === 'HEAD') res.end();
    else res.end(body);
  }
}

async function load(file: string): Promise<Loaded> {
  const body = await fs.promises.readFile(file);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const gzipped = body.length >= GZIP_MIN_BYTES ? await gzip(body, { level: 9 }) : null;
  return { body, gzipped, type: TYPES[path.extname(file)] as string, etag };
}

/** Whether an `If-None-Match` value names `etag` (or is `*`). */
function fresh(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v === etag || v === `W/${etag}`;
  });
}
