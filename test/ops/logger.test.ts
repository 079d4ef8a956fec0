/**
 * The service's logger scrubs every line of credentials: the lines below are
 * what any caller could log, written through the real pino logger into a stream the test reads.
 * (Through the server: test/http/secrets.test.ts.)
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/ops/logger.js';

const TOKEN = 'Tok.en~+/9=';

function capture(secrets: (string | null)[] = [TOKEN]) {
  let raw = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw += chunk.toString('utf8');
      cb();
    },
  });
  const log = createLogger('info', { destination, secrets });
  const lines = () =>
    raw
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, any>);
  return { log, lines, raw: () => raw };
}

/** pino writes to a Writable asynchronously: a turn of the event loop. */
const settle = () => new Promise((r) => setImmediate(r));

describe('createLogger', () => {
  it('redacts credential members at any depth and in any case: headers, cookies, tokens, passwords', async () => {
    const { log, lines } = capture([]);
    log.info({
      req: { headers: { Authorization: 'Bearer abc', cookie: 'sid=1', 'x-api-key': 'k', accept: 'text/html' } },
      deep: { a: { b: [{ headers: { 'proxy-authorization': 'Basic x' } }] } },
      password: 'hunter2',
      token: 'abc',
      tokens: 3,
    });
    await settle();
    expect(lines()[0]).toMatchObject({
      req: { headers: { Authorization: '[REDACTED]', cookie: '[REDACTED]', 'x-api-key': '[REDACTED]', accept: 'text/html' } },
      deep: { a: { b: [{ headers: { 'proxy-authorization': '[REDACTED]' } }] } },
      password: '[REDACTED]',
      token: '[REDACTED]',
      tokens: 3,
    });
  });

  it('scrubs credential query parameters (any spelling of the name) and URL userinfo in every string, the message included', async () => {
    const { log, lines } = capture([]);
    log.info(
      { url: '/api/events/stream?severities=info&token=abc&Access_Token=x&%74oken=y;sig=z#f', upstream: 'https://user:pa55@up.example/x?q=1', note: 'no query here token=abc' },
      'GET http://me:pw@h/api?api_key=1&keep=2',
    );
    await settle();
    expect(lines()[0]).toMatchObject({
      url: '/api/events/stream?severities=info&token=[REDACTED]&Access_Token=[REDACTED]&%74oken=[REDACTED];sig=[REDACTED]#f',
      upstream: 'https://[REDACTED]@up.example/x?q=1',
      note: 'no query here token=abc',
      msg: 'GET http://[REDACTED]@h/api?api_key=[REDACTED]&keep=2',
    });
  });

  it('replaces its secrets wherever they appear, also percent-encoded in either case, in members, messages and errors', async () => {
    const { log, raw } = capture([TOKEN, null, '']);
    const lower = encodeURIComponent(TOKEN).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    log.info({ detail: `compare ${TOKEN} and ${encodeURIComponent(TOKEN)}`, list: [lower] }, `said ${TOKEN}`);
    const err = Object.assign(new Error(`bad value ${TOKEN}`), { request: { url: `/x?t=${lower}` } });
    log.error({ err }, 'failed');
    log.error(err);
    await settle();
    expect(raw()).not.toContain(TOKEN);
    expect(raw()).not.toContain(encodeURIComponent(TOKEN));
    expect(raw()).not.toContain(lower);
    expect(raw().match(/\[REDACTED\]/g)?.length).toBeGreaterThanOrEqual(8);
    // The error is still logged as pino logs errors: type, message, stack.
    expect(raw()).toContain('"type":"Error","message":"bad value [REDACTED]"');
  });

  it('keeps every line valid JSON whatever the secret: replaced inside strings, never in numbers or in the line’s own syntax', async () => {
    // Tokens (valid CONSOLE_API_TOKEN values) made of what JSON lines hold outside strings: digits, `.`, `-`, literals.
    const secrets = ['30', '1', '5', '0', '.', '-', 'true', 'null'];
    for (const secret of secrets) {
      const { log, raw } = capture([secret]);
      log.info({ n: 30, f: 1.5, neg: -1, b: true, z: null, s: `x${secret}y`, url: `/api/events/stream?token=${secret}` }, `msg ${secret}`);
      await settle();
      const lines = raw()
        .split('\n')
        .filter((l) => l !== '');
      expect({ secret, count: lines.length }).toEqual({ secret, count: 1 });
      const line = JSON.parse(lines[0] as string) as Record<string, unknown>;
      expect({ secret, line }).toMatchObject({ secret, line: { level: 30, n: 30, f: 1.5, neg: -1, b: true, z: null, s: 'x[REDACTED]y', url: '/api/events/stream?token=[REDACTED]' } });
      expect(String(line.msg)).not.toContain(secret);
    }
  });
});
