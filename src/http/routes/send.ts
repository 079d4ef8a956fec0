import type { Request, Response } from 'express';
import type { CachedBody } from '../../engine/store.js';

/** Sends a cached JSON body with its ETag; a matching `If-None-Match` gets a 304. */
export function sendCached(req: Request, res: Response, cached: CachedBody): void {
  res.set('ETag', cached.etag);
  res.type('application/json');
  if (req.fresh) {
    res.status(304).end();
    return;
  }
  res.send(cached.body);
}
