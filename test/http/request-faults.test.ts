/**
 * Which errors the JSON body parser passes on are the request's fault (400 `bad_request`) and
 * which the service's (500 `internal`): body-parser gives status 400 to whatever it meets while
 * reading a body, the service's own faults too. Real errors, as Node raises them, given status
 * 400 as body-parser does (http-errors keeps the error and sets its status).
 */
import net from 'node:net';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { toServiceError } from '../../src/http/error-middleware.js';

/** `err` as body-parser passes it on. */
const asParserGives = (err: Error) => Object.assign(err, { status: 400, statusCode: 400, expose: true });

/** The error Node raises for `open` of `file` when the process has no descriptor left. */
const emfile = (file: string) => Object.assign(new Error(`EMFILE: too many open files, open '${file}'`), { errno: -24, code: 'EMFILE', syscall: 'open', path: file });

/** A real error of a socket whose peer reset the connection. */
async function connectionReset(): Promise<Error> {
  const server = net.createServer((s) => s.resetAndDestroy());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await new Promise<Error>((resolve) => {
      const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      c.on('error', resolve);
      c.on('connect', () => c.write('x'));
    });
  } finally {
    server.close();
  }
}

describe('a body parser error', () => {
  it('is the request’s fault when its stream failed: a body that does not decompress, a reset connection', async () => {
    let gunzip: Error | undefined;
    try {
      zlib.gunzipSync(Buffer.from('not gzip'));
    } catch (err) {
      gunzip = err as Error;
    }
    const reset = await connectionReset();
    expect((reset as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    for (const err of [gunzip!, reset]) expect(toServiceError(asParserGives(err)).code, err.message).toBe('bad_request');
  });

  it('is the service’s when a file could not be opened, or the service ran out of descriptors: 500 internal, no path answered', () => {
    // A module the parser loads on first use, while the process has no descriptor left.
    const refused = toServiceError(asParserGives(emfile('/srv/console/node_modules/iconv-lite/encodings/utf32.js')));
    expect(refused.code).toBe('internal');
    expect(refused.message).not.toContain('/');
    const missing = Object.assign(new Error("ENOENT: no such file or directory, open '/srv/x.js'"), { errno: -2, code: 'ENOENT', syscall: 'open', path: '/srv/x.js' });
    expect(toServiceError(asParserGives(missing)).code).toBe('internal');
    const noDescriptor = Object.assign(new Error('EMFILE: too many open files'), { errno: -24, code: 'EMFILE' });
    expect(toServiceError(asParserGives(noDescriptor)).code).toBe('internal');
  });
});
