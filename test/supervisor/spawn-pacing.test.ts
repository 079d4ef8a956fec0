/**
 * One job spawned per event-loop turn (issue 12, P7; src/supervisor/spawn-pacer.ts). A spawn
 * holds the main thread until the child has exec'd; a burst of generation requests arriving
 * together was spawned back to back, and a read that came meanwhile was answered after the
 * whole burst. Paced, reads are answered between two spawns. The service runs as its own
 * process (in the test's process, the test's own writes interleave with the server's turns):
 * 16 generation requests written at once on open connections, then 3 reads; at least one read
 * is answered before the last generation request (it was after all of them).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { fixture, SAMPLE_STORE } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';

const JOBS = 16;
const READS = 3;
let svc: ServiceProcess | undefined;
let tmp: string | undefined;
afterAll(async () => {
  await svc?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

it('answers reads between the spawns of a burst of generation requests', async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'spawn-pacing-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  svc = await startServiceProcess({
    env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: path.join(tmp, 'state'), DISPATCH_CLI: fixture('exit-3.mjs'), CONSOLE_JOB_NICE: '0' },
  });
  const { port } = new URL(svc.url);
  const sockets = await Promise.all(
    Array.from({ length: JOBS + READS }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
    })),
  );
  const order: string[] = [];
  const answered = sockets.map(
    (s, i) =>
      new Promise<string>((resolve) => {
        let text = '';
        s.setEncoding('utf8');
        s.on('data', (c: string) => {
          text += c;
          if (/\r\n\r\n[\s\S]*\}$/.test(text)) {
            order.push(i < JOBS ? 'spawn' : 'read');
            s.destroy();
            resolve(text.split(' ')[1] as string);
          }
        });
      }),
  );
  const body = JSON.stringify({ project: 'harbor-lights' });
  for (const s of sockets.slice(0, JOBS)) s.write(`POST /api/proposals/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  for (const s of sockets.slice(JOBS)) s.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const statuses = await Promise.all(answered);
  expect(statuses).toEqual([...Array(JOBS).fill('202'), ...Array(READS).fill('200')]);
  console.log(`spawn-pacing: answers in order ${order.map((o) => (o === 'spawn' ? 'S' : 'R')).join('')}`);
  expect(order.indexOf('read'), 'a read answered before the last spawn').toBeLessThan(order.lastIndexOf('spawn'));
});
