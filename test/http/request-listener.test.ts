/**
 * The app's request listener (src/http/app.ts, `serve`): what Express's `app.handle` gives a
 * request, the middleware chain run without Express's router, the fall-through to "no route",
 * and the last resort when the error answer itself fails; the request and response classes
 * (`messageClasses`) that spare each request a change of prototype, which the service's server
 * uses. The service's own behaviour through it is what every other HTTP test exercises.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { messageClasses, serve } from '../../src/http/app.js';
import { startTestService } from '../helpers/service.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(chain: RequestHandler, onError: ErrorRequestHandler, classes = false): Promise<string> {
  const app = express();
  const listener = serve(app, chain, (req) => Object.assign(new Error(`no route for ${req.method} ${req.path}`), { status: 404 }), onError);
  const server = classes ? http.createServer(messageClasses(app), listener) : http.createServer(listener);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const answerErrors: ErrorRequestHandler = (err: Error & { status?: number }, _req, res) => {
  res.status(err.status ?? 500).json({ detail: err.message });
};

describe.each([
  { server: 'a server made with messageClasses', classes: true },
  { server: 'a plain Node server', classes: false },
])('on $server', ({ classes }) => {
  it('gives each request Express’s request and response, and runs the chain', async () => {
    const url = await listen(
      (req, res) => {
        res.json({
          host: req.get('host') === new URL(url).host,
          originalUrl: req.originalUrl,
          baseUrl: req.baseUrl,
          path: req.path,
          query: req.query,
          locals: typeof res.locals,
          app: req.app === res.app && typeof req.app.get === 'function',
        });
      },
      answerErrors,
      classes,
    );
    const res = await fetch(`${url}/api/x?a=1`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ host: true, originalUrl: '/api/x?a=1', baseUrl: '', path: '/api/x', query: { a: '1' }, locals: 'object', app: true });
  });
});

it('changes no prototype per request on a server made with messageClasses (a plain server changes two)', async () => {
  // V8 makes an object whose prototype changed slow, and it outlives the young generation
  // (bench/RESULTS.md, P5).
  const handler: RequestHandler = (_req, res) => {
    res.json({ ok: true });
  };
  const withClasses = await listen(handler, answerErrors, true);
  const plain = await listen(handler, answerErrors, false);
  const spy = vi.spyOn(Object, 'setPrototypeOf');
  try {
    for (let i = 0; i < 3; i++) expect((await fetch(withClasses)).status).toBe(200);
    expect(spy).not.toHaveBeenCalled();
    expect((await fetch(plain)).status).toBe(200);
    expect(spy).toHaveBeenCalledTimes(2);
  } finally {
    spy.mockRestore();
  }
});

it('the service’s server makes its requests with those classes', async () => {
  const t = await startTestService();
  try {
    const seen: string[] = [];
    const probe = (req: http.IncomingMessage) => seen.push(typeof (req as unknown as { get?: unknown }).get);
    t.service.server.prependListener('request', probe);
    expect((await fetch(`${t.url}/api/health`)).status).toBe(200);
    // Express's `req.get` is there before the app's listener runs.
    expect(seen).toEqual(['function']);
  } finally {
    await t.close();
  }
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
