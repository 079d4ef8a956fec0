/**
 * Sending cached JSON bodies, the hot path of every entity route. The headers are known in
 * advance, so the answer is written directly; Express's `res.send` would work out content
 * type, length and freshness again on every request.
 */
import type { Request, Response } from 'express';
import type { CachedBody } from '../../engine/store.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a cached JSON body with its ETag; an `If-None-Match` naming it gets a 304 (weak
 * comparison, RFC 9110 §13.1.2: entity tags match whatever their W/ prefix).
 */
export function sendCached(req: Request, res: Response, cached: CachedBody): void {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined && etagListed(inm, cached.etag) && !noCache(req)) {
    res.writeHead(304, { ETag: cached.etag });
    res.end();
    return;
  }
  res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Content-Length': cached.body.length, ETag: cached.etag });
  res.end(req.method === 'HEAD' ? undefined : cached.body);
}

/**
 * Sends an answer of the engine store (`EngineStore.query`): at once when it is there (a cache
 * hit, no promise on the hot path), else when it comes.
 * @returns a promise only for an answer still to come; it rejects with the store's error.
 */
export function sendAnswer(req: Request, res: Response, answer: CachedBody | Promise<CachedBody>): void | Promise<void> {
  if (answer instanceof Promise) return answer.then((cached) => sendCached(req, res, cached));
  sendCached(req, res, answer);
}

/** Whether the If-None-Match list names `etag` (or is `*`). */
export function etagListed(header: string, etag: string): boolean {
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const raw of header.split(',')) {
    const t = raw.trim();
    if (t === '*' || (t.startsWith('W/') ? t.slice(2) : t) === opaque) return true;
  }
  return false;
}

/** `Cache-Control: no-cache` asks for the full answer even when the client holds it. */
function noCache(req: Request): boolean {
  const cc = req.headers['cache-control'];
  return cc !== undefined && /(?:^|,)\s*no-cache\s*(?:,|$)/.test(cc);
}
