/**
 * P8's floor over HTTP: what showing a new take costs with no service around it. It watches
 * the takes folder BENCH_TAKES_DIR (fs.watch, as the service's watcher does), re-reads and
 * parses each new `<id>.json`, and answers two routes from memory, polled as the bench polls the
 * service's takes and beats routes:
 * - `GET /takes`: `{"seen":[<take ids read>],"answer":<the service's takes answer>}`;
 * - `GET /beats`: `{"count":<takes read>,"answer":<the service's beats answer>}`;
 * the `answer` members being the service's own answers (BENCH_BYTES_FILE, bench/lib/answer-bytes,
 * under the names `/takes` and `/beats`), so that the answers are as large as the service's.
 * `GET /health` answers for the start-up check.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadAnswers } from '../lib/answer-bytes.js';

const dir = process.env.BENCH_TAKES_DIR as string;
const answers = loadAnswers(process.env.BENCH_BYTES_FILE);
const takesAnswer = answers.get('/takes')?.body.toString('utf8') ?? 'null';
const beatsAnswer = answers.get('/beats')?.body.toString('utf8') ?? 'null';
const seen: string[] = [];
const seenNames = new Set<string>();

fs.watch(dir, (_event, name) => {
  const file = name === null ? null : String(name);
  if (file === null || file.startsWith('.') || !file.endsWith('.json') || seenNames.has(file)) return;
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, file), 'utf8');
  } catch {
    return; // not there (yet)
  }
  const take = JSON.parse(text) as { take_id: string };
  seenNames.add(file);
  seen.push(take.take_id);
});

http
  .createServer((req, res) => {
    let body: string;
    if (req.url === '/takes') body = `{"seen":${JSON.stringify(seen)},"answer":${takesAnswer}}`;
    else if (req.url === '/beats') body = `{"count":${seen.length},"answer":${beatsAnswer}}`;
    else if (req.url === '/health') body = '{"ok":true}';
    else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
