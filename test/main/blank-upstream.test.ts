/**
 * A blank SERVICE_WRITE_UPSTREAM means unset, as a blank TTYD_HOST does: a
 * deployment template that writes `SERVICE_WRITE_UPSTREAM=` starts the service, which then runs
 * mutations itself. It stopped start-up ("expected an http(s) URL"). The compiled service runs
 * as its own process, configured by its environment, as `npm start` runs it.
 */
import fs from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { startServiceProcess } from '../helpers/process.js';
import { makeTempStore } from '../helpers/service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

it.each(['', '   '])('starts with SERVICE_WRITE_UPSTREAM=%j and runs mutations here', async (blank) => {
  const store = makeTempStore('sample');
  cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const svc = await startServiceProcess(store, { SERVICE_WRITE_UPSTREAM: blank }, (fn) => cleanups.push(fn));

  const created = await fetch(`${svc.url}/api/proposals`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'here' }) });
  expect(created.status).toBe(201);
  const status = (await (await fetch(`${svc.url}/api/system-status`)).json()) as { writeProxy: { enabled: boolean; upstream: string | null; forwarded: number } };
  expect(status.writeProxy).toMatchObject({ enabled: false, upstream: null, forwarded: 0 });
  const titles = ((await (await fetch(`${svc.url}/api/proposals`)).json()) as { title: string }[]).map((p) => p.title);
  expect(titles).toEqual(['here']);
});
