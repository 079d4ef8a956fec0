/**
 * Opens N idle SSE connections (argv: url, n), prints `ready` when all have their headers,
 * then keeps them open until stdin closes; prints {open} at the end.
 */
import http from 'node:http';

const [url, nArg] = process.argv.slice(2) as [string, string];
const u = new URL(url);
let open = 0;
const n = Number(nArg);
for (let i = 0; i < n; i++) {
  http
    .get({ host: u.hostname, port: u.port, path: '/api/events/stream', agent: false }, (res) => {
      res.resume();
      if (++open === n) process.stdout.write('ready\n');
      res.on('close', () => open--);
    })
    .on('error', () => undefined);
}
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ open })}\n`);
  process.exit(0);
});
