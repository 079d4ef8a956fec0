/**
 * Spawn orders paced on the job I/O thread (src/supervisor/spawn-pacer.ts): one per turn of the
 * thread's loop, the next once the last job was reported; the main thread posts every order at once.
 *
 * The pacer itself: at most one waiting spawn goes per event-loop turn, in call order, and the
 * next only once the last one's job was reported (its `done`, or a bound; counted
 * in turns of the loop, not timed), while a connection's I/O goes on. Through the real
 * service: a burst of 16 generation requests and reads sent during it are all answered; the
 * order the service answered them in (its request log) is printed. Whether a read lands
 * between two spawns depends on how fast this machine spawns against how fast this process
 * sends, so that order is shown, not asserted.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { SpawnPacer } from '../../src/supervisor/spawn-pacer.js';
import { waitFor } from '../helpers/events.js';
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

it('lets one waiting spawn go per event-loop turn, in call order, while I/O goes on', async () => {
  const pacer = new SpawnPacer();
  // A turn counter: one increment per turn of the loop (each check phase).
  let turn = 0;
  let counting = true;
  const count = () => {
    turn++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  // I/O that becomes ready while the spawns wait: a loopback connection's data.
  const server = net.createServer((c) => c.end('x'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const order: string[] = [];
  const turns: number[] = [];
  const waiting = Array.from({ length: 8 }, (_, i) =>
    pacer.turn().then((done) => {
      order.push(`spawn ${i}`);
      turns.push(turn);
      done();
    }),
  );
  const io = new Promise<void>((resolve) => {
    const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    c.on('data', () => {
      order.push('io');
      c.destroy();
      resolve();
    });
  });
  await Promise.all([...waiting, io]);
  counting = false;
  server.close();
  // Each spawn in a turn of its own, in call order.
  expect(new Set(turns).size).toBe(8);
  expect(order.filter((o) => o !== 'io')).toEqual(Array.from({ length: 8 }, (_, i) => `spawn ${i}`));
  expect(pacer.waiting).toBe(0);
});

it('gives the next turn only once the last one is done (its child lowered), or after the hold bound', async () => {
  // A minute's bound: only `done` can release the second turn here.
  const pacer = new SpawnPacer(60_000);
  const got: number[] = [];
  const dones: (() => void)[] = [];
  const turns = [0, 1, 2].map((i) =>
    pacer.turn().then((done) => {
      got.push(i);
      dones.push(done);
    }),
  );
  await turns[0];
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  expect(got).toEqual([0]);
  expect(pacer.waiting).toBe(2);
  dones[0]?.();
  dones[0]?.(); // a second call does nothing
  await turns[1];
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  expect(got).toEqual([0, 1]);
  dones[1]?.();
  await turns[2];
  expect(got).toEqual([0, 1, 2]);
  dones[2]?.();

  // A turn whose `done` never comes holds the next one for the bound only.
  const short = new SpawnPacer(20);
  await short.turn();
  const next = await short.turn();
  next();
  expect(short.waiting).toBe(0);
});

it('answers a burst of generation requests and the reads sent during it', async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'spawn-pacing-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  svc = await startServiceProcess({
    env: { CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: path.join(tmp, 'state'), DISPATCH_CLI: fixture('exit-3.mjs'), CONSOLE_JOB_NICE: '0', LOG_LEVEL: 'info' },
  });
  const { port } = new URL(svc.url);
  const sockets = await Promise.all(
    Array.from(
      { length: JOBS + READS },
      () =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const seen: string[] = [];
  let firstSpawn: () => void = () => {};
  const firstSpawned = new Promise<void>((resolve) => (firstSpawn = resolve));
  const answered = sockets.map(
    (s, i) =>
      new Promise<string>((resolve) => {
        let text = '';
        s.setEncoding('utf8');
        s.on('data', (c: string) => {
          text += c;
          if (/\r\n\r\n[\s\S]*\}$/.test(text)) {
            seen.push(i < JOBS ? 'S' : 'R');
            if (i < JOBS) firstSpawn();
            s.destroy();
            resolve(text.split(' ')[1] as string);
          }
        });
      }),
  );
  const body = JSON.stringify({ project: 'harbor-lights' });
  for (const s of sockets.slice(0, JOBS)) s.write(`POST /api/proposals/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  await firstSpawned;
  for (const s of sockets.slice(JOBS)) s.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const statuses = await Promise.all(answered);
  expect(statuses).toEqual([...Array(JOBS).fill('202'), ...Array(READS).fill('200')]);
  // The service's request log: one line per answer, in the order it answered.
  const order = await waitFor(() => {
    const lines =
      svc
        ?.stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { path?: string; status?: number }) ?? [];
    const answers = lines.filter((l) => l.path === '/api/health' || l.path === '/api/proposals/generate').map((l) => (l.path === '/api/health' ? 'R' : 'S'));
    return answers.length >= JOBS + READS ? answers : undefined;
  }, 'the request log of the 19 answers');
  console.log(`spawn-pacing: the service answered in order ${order.join('')} (S: a generation request, R: a read; seen here in order ${seen.join('')})`);
});
