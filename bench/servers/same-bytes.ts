/**
 * P1's limit: node:http serving, from memory, the very bytes the service answered for each
 * path (body and Content-Type, read from the JSON file named by BENCH_BYTES_FILE:
 * {path: {type, body (base64)}}), with nothing else on the way: no framework, no routing
 * beyond one Map lookup, no work per request. What this machine can do for these answers is
 * bounded by it; `GET /health` answers for the start-up check.
 *
 * BENCH_EXPRESS=1 serves the same bytes the same way from one Express 5 route instead (the
 * P1 ladder, bench/tools/p1-ladder): the difference is what Express itself costs per request.
 */
import http from 'node:http';
import express from 'express';
import { loadAnswers } from '../lib/answer-bytes.js';

const answers = loadAnswers(process.env.BENCH_BYTES_FILE);
answers.set('/health', { type: 'application/json', body: Buffer.from('{"ok":true}') });

const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
  const a = answers.get(req.url ?? '');
  if (!a) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'Content-Type': a.type, 'Content-Length': a.body.length });
  res.end(a.body);
};

if (process.env.BENCH_EXPRESS === '1') {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/{*path}', (req, res) => serve(req, res));
  app.listen(Number(process.env.PORT), '127.0.0.1');
} else {
  http.createServer(serve).listen(Number(process.env.PORT), '127.0.0.1');
}
