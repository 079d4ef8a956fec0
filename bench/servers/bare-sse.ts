/**
 * P4 baseline: a bare Express route writing the same Server-Sent Events frames the service
 * writes. Clients connect to `GET /frames`; `POST /start?n=N` writes N frames to every
 * connected client, a batch per event-loop turn with one buffer shared by all clients (the
 * best a bare server can do), then ends the streams.
 */
import express from 'express';
import type { Response } from 'express';

const app = express();
const clients = new Set<Response>();
const BATCH = Number(process.env.BENCH_BATCH ?? 500);

/** The frame of event `i`, shaped like a generation line event of the service. */
export function frame(i: number): string {
  const data = `{"id":"${i}","ts":"2026-11-22T00:00:00.000Z","severity":"info","scope":"engine/generation","summary":"line ${i} abcdefghijklmnopqrstuvwxyz0123","detail":"gen_0123456789ab stdout line ${i}","payload":{"source":"dispatch_cli"}}`;
  return `id: ${i}\ndata: ${data}\n\n`;
}

app.get('/health', (_req, res) => {
  res.json({ ok: true, clients: clients.size });
});
app.get('/frames', (req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.write('retry: 2000\n\n');
  clients.add(res);
  req.on('close', () => clients.delete(res));
});
app.post('/start', (req, res) => {
  const n = Number(req.query.n);
  let i = 1;
  const step = () => {
    let text = '';
    const end = Math.min(n, i + BATCH - 1);
    for (; i <= end; i++) text += frame(i);
    const buf = Buffer.from(text);
    for (const c of clients) c.write(buf);
    if (i <= n) setImmediate(step);
    else for (const c of clients) c.end();
  };
  setImmediate(step);
  res.json({ started: n });
});
app.listen(Number(process.env.PORT), '127.0.0.1');
