/**
 * Middleware run in turn as one handler: what Express's router does for a stack of layers,
 * without matching a path and saving and restoring the request's URL for each (a tenth of the
 * service's CPU on the read routes, P1). Used for the app's middleware before routing
 * (app.ts) and for each route's guards and handler (route.ts).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Returns one handler that runs `handlers` in turn. An error (passed to `next`, thrown, or an
 * async handler's rejection, as Express 5 treats it), or a `next()` past the last, goes on to
 * the caller's `next`.
 */
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

/**
 * Runs one handler as Express's router runs a layer (Express 5): an error it throws, or the
 * rejection of the promise it returns, goes to `next`.
 */
export function runLayer(handler: RequestHandler, req: Request, res: Response, next: NextFunction): void {
  try {
    const out = handler(req, res, next) as unknown;
    if (out instanceof Promise) out.catch(next);
  } catch (e) {
    next(e);
  }
}
