/**
 * Open-loop read load (P7's console): sends GET requests at a fixed rate, scheduled by the
 * clock and never after the previous answer, so a slow answer cannot hide the requests that
 * would have queued behind it (coordinated omission). Latency is measured from each request's
 * scheduled send time to the end of its answer. Options as JSON in argv[2]:
 * {url, paths, rate (requests/s), durationS, timeoutMs?}; the paths are sent in turn.
 *
 * A request whose kept-alive connection the server had just closed as idle (ECONNRESET on a
 * reused socket) is sent again once, on a new connection, as a browser does.
 * Connections come from a keep-alive agent without a socket limit: when every open connection
 * is busy, a due request opens a new one rather than wait for one (the wait would be
 * omission again). Prints `ready` at once, then one JSON line: the wall-clock time of the
 * start (`t0Wall`, ms), every request as [scheduled ms from the start, latency ms, status (0
 * for an error), path index], and the errors.
 */
import http from 'node:http';

const opts = JSON.parse(process.argv[2] ?? '{}') as { url: string; paths: string[]; rate: number; durationS: number; timeoutMs?: number };
const u = new URL(opts.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const interval = 1000 / opts.rate;
const total = Math.round(opts.rate * opts.durationS);
const timeoutMs = opts.timeoutMs ?? 30_000;
const samples: [number, number, number, number][] = [];
const errors: string[] = [];
let answered = 0;
/** Requests sent again after a reset of a reused connection (once each). */
const retried = new Set<number>();
let retries = 0;

process.stdout.write('ready\n');
const t0 = performance.now() + 20;
let sent = 0;

const finished = new Promise<void>((resolve) => {
  const settle = (i: number, scheduled: number, status: number) => {
    samples.push([scheduled - t0, performance.now() - scheduled, status, i % opts.paths.length]);
    if (++answered === total) resolve();
  };
  const send = (i: number, scheduled: number) => {
    const req = http.get({ host: u.hostname, port: u.port, path: opts.paths[i % opts.paths.length], agent, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => settle(i, scheduled, res.statusCode ?? 0));
      res.on('error', (e) => {
        if (errors.length < 20) errors.push(String(e));
        settle(i, scheduled, 0);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => {
      // A kept-alive connection the server closed as idle just as this request went out on it:
      // sent again at once on a fresh one, as browsers and Node's docs do (`req.reusedSocket`);
      // its latency still counts from its scheduled time.
      if (req.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET' && !retried.has(i)) {
        retried.add(i);
        retries++;
        send(i, scheduled);
        return;
      }
      if (errors.length < 20) errors.push(`${opts.paths[i % opts.paths.length]}: ${String(e)}`);
      settle(i, scheduled, 0);
    });
  };
  const pump = () => {
    const now = performance.now();
    // Every request due by now goes out now, each with its own scheduled time.
    while (sent < total && t0 + sent * interval <= now) {
      send(sent, t0 + sent * interval);
      sent++;
    }
    if (sent < total) setTimeout(pump, Math.max(0, t0 + sent * interval - performance.now()));
  };
  setTimeout(pump, 20);
});
await finished;
agent.destroy();
process.stdout.write(`${JSON.stringify({ t0Wall: performance.timeOrigin + t0, samples, errors, retries })}\n`);
