/**
 * Middleware run in turn as one handler, like Express's router but without per-layer path
 * matching and URL save/restore (a tenth of the CPU on the read routes). Used by app.ts and route.ts.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** One handler running `handlers` in turn; an error (passed, thrown or rejected) or `next()` past the last goes to the caller's `next`. */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) {
        next(err);
        return;
      }
      const handler = handlers[i++];
      if (handler === undefined) {
        next();
        return;
      }
      runLayer(handler, req, res, step);
    };
    step();
  };
}

/** Runs one handler as an Express 5 layer: a throw or rejected promise goes to `next`. */
export function runLayer(handler: RequestHandler, req: Request, res: Response, next: NextFunction): void {
  try {
    const out = handler(req, res, next) as unknown;
    if (out instanceof Promise) out.catch(next);
  } catch (e) {
    next(e);
  }
}
