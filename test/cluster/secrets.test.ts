/**
 * No configured secret is shown: a PostgreSQL URL carries
 * credentials in more places than its userinfo (`?password=`, `?sslpassword=`, `?passfile=`…, as
 * libpq and node-postgres read them). Every form is tried against a real server, and the secret
 * is looked for in every place the service writes: the open readiness answer (which, without
 * the token, names nothing of the installation), the system status, its log lines, and the
 * message of a start-up that fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { failedStart } from '../helpers/service-process.js';

const PASSWORD = 'console-test';
const TOKEN = 'secrets-test-token';
let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
}, 120_000);

/** The shared database's URL in another spelling of its credentials. */
function spelled(form: 'userinfo' | 'query' | 'query-user' | 'encoded', password = PASSWORD, extra = ''): string {
  const u = new URL(cluster.url);
  const where = `${u.hostname}:${u.port}${u.pathname}`;
  if (form === 'userinfo') return `postgresql://postgres:${encodeURIComponent(password)}@${where}${extra ? `?${extra}` : ''}`;
  if (form === 'query') return `postgres://postgres@${where}?password=${encodeURIComponent(password)}${extra ? `&${extra}` : ''}`;
  if (form === 'query-user') return `postgres://${where}?user=postgres&password=${encodeURIComponent(password)}${extra ? `&${extra}` : ''}`;
  return `postgres://postgres@${where}?%70assword=${encodeURIComponent(password)}${extra ? `&${extra}` : ''}`;
}

describe('the database URL’s credentials', () => {
  it('appear nowhere the service writes, in every spelling: readiness (open or with the token), status, logs', async () => {
    for (const form of ['userinfo', 'query', 'query-user'] as const) {
      const p = await cluster.start(`s-${form}`, { CONSOLE_DATABASE_URL: spelled(form, PASSWORD, 'application_name=console'), CONSOLE_API_TOKEN: TOKEN, LOG_LEVEL: 'debug' });
      const open = await (await fetch(`${p.url}/api/ready`)).text();
      const withToken = await (await fetch(`${p.url}/api/ready`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      const status = await (await fetch(`${p.url}/api/system-status`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      for (const [where, text] of [
        ['ready', open],
        ['ready with the token', withToken],
        ['status', status],
        ['logs', p.stderr() + p.stdout()],
      ] as const) {
        expect(text, `${form}: ${where}`).not.toContain(PASSWORD);
        expect(text, `${form}: ${where}`).not.toContain('postgres://');
        expect(text, `${form}: ${where}`).not.toContain('postgresql://');
      }
      // Without the token, readiness names each check and its result only.
      expect(JSON.parse(open)).toEqual({ ready: true, checks: expect.arrayContaining([{ name: 'stateDatabase', ok: true }]) });
      for (const c of JSON.parse(open).checks) expect(Object.keys(c).sort()).toEqual(['name', 'ok']);
      // With it, where the database is: host:port/database.
      const u = new URL(cluster.url);
      expect(JSON.parse(withToken).checks).toEqual(expect.arrayContaining([{ name: 'stateDatabase', ok: true, detail: `${u.hostname}:${u.port}${u.pathname} answers` }]));
      expect(JSON.parse(status).database.url).toBe(`${u.hostname}:${u.port}${u.pathname}`);
      await p.stop();
    }
  });

  it('appear nowhere in the message of a start-up refused by the server, in every spelling', async () => {
    const wrong = 'Wr0ng-p4ss-x7';
    for (const form of ['userinfo', 'query', 'query-user', 'encoded'] as const) {
      for (const extra of ['', 'sslpassword=ssl-secret-9&passfile=/secret/passfile-9']) {
        const r = await failedStart({ env: cluster.envOf(`f-${form}`, { CONSOLE_DATABASE_URL: spelled(form, wrong, extra), CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: '2000', LOG_LEVEL: 'debug' }) });
        expect(r.code, `${form} ${extra}`).not.toBe(0);
        expect(r.stderr, `${form} ${extra}`).toMatch(/CONSOLE_DATABASE_URL \(127\.0\.0\.1:\d+\/\w+\)/);
        for (const secret of [wrong, 'ssl-secret-9', '/secret/passfile-9']) expect(r.stderr, `${form} ${extra}`).not.toContain(secret);
      }
    }
  });
});
