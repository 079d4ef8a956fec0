/**
 * Baseline server: a bare Express 5 app.
 * - `GET /json`: a 200-byte JSON object.
 * - `GET /frames?n=&size=`: writes `n` Server-Sent Events frames of the given size, the way
 *   the service frames events, then ends.
 */
import express from 'express';

const app = express();
const body = { ok: true, id: 'baseline', note: 'x'.repeat(200 - 37) };
const json = JSON.stringify(body);
if (json.length !== 200) throw new Error(`baseline body is ${json.length} bytes`);
app.get('/json', (_req, res) => {
  res.json(body);
});
app.get('/health', (_req, res) => {
  res.json({ ok: true });
});
app.listen(Number(process.env.PORT), '127.0.0.1');
