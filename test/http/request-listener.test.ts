/**
 * The app's request listener (src/http/app.ts, `serve`): what Express's `app.handle` gives a
 * request, the middleware chain run without Express's router, the fall-through to "no route",
 * and the last resort when the error answer itself fails. The service's own behaviour through
 * it is what every other HTTP test exercises.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterEach, expect, it } from 'vitest';
import { serve } from '../../src/http/app.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(chain: RequestHandler, onError: ErrorRequestHandler): Promise<string> {
  const app = express();
  const server = http.createServer(serve(app, chain, (req) => Object.assign(new Error(`no route for ${req.method} ${req.path}`), { status: 404 }), onError));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const answerErrors: ErrorRequestHandler = (err: Error & { status?: number }, _req, res) => {
  res.status(err.status ?? 500).json({ detail: err.message });
};

it('gives each request Express’s request and response, and runs the chain', async () => {
  const url = await listen((req, res) => {
    res.json({ host: req.get('host') === new URL(url).host, originalUrl: req.originalUrl, baseUrl: req.baseUrl, path: req.path, query: req.query, locals: typeof res.locals });
  }, answerErrors);
  const res = await fetch(`${url}/api/x?a=1`);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ host: true, originalUrl: '/api/x?a=1', baseUrl: '', path: '/api/x', query: { a: '1' }, locals: 'object' });
});

it('answers a request the chain passes on with the no-route error, and every error through the error handler', async () => {
  const url = await listen((req, _res, next) => (req.path === '/boom' ? next(new Error('boom')) : next()), answerErrors);
  const none = await fetch(`${url}/nowhere`);
  expect([none.status, await none.json()]).toEqual([404, { detail: 'no route for GET /nowhere' }]);
  const boom = await fetch(`${url}/boom`);
  expect([boom.status, await boom.json()]).toEqual([500, { detail: 'boom' }]);
});

it('takes errors a handler throws or rejects with', async () => {
  const url = await listen(async (req) => {
    if (req.path === '/throw') throw Object.assign(new Error('thrown'), { status: 409 });
    await Promise.reject(Object.assign(new Error('rejected'), { status: 418 }));
  }, answerErrors);
  expect((await fetch(`${url}/throw`)).status).toBe(409);
  expect((await fetch(`${url}/reject`)).status).toBe(418);
});

it('answers a bare 500 when the error answer fails, and cuts an answer already begun', async () => {
  const failing: ErrorRequestHandler = () => {
    throw new Error('the error handler failed');
  };
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    const url = await listen((req, res, next) => {
      if (req.path === '/begun') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
      }
      next(new Error('late'));
    }, failing);
    const bare = await fetch(`${url}/x`);
    expect([bare.status, await bare.text()]).toEqual([500, 'Internal Server Error']);
    // The connection is destroyed: the client sees it cut (before or after the head arrived).
    await expect(fetch(`${url}/begun`).then((r) => r.text())).rejects.toThrow();
    expect(warnings.some((w) => w.includes('the error handler failed'))).toBe(true);
  } finally {
    process.off('warning', onWarning);
  }
});
