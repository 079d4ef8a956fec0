/**
 * A raw HTTP/1.1 request with node:http: the path is sent exactly as given (fetch would
 * normalise `..` and `%2e%2e` away) and no headers are added (fetch adds `Cache-Control:
 * no-cache` to conditional requests).
 */
import http from 'node:http';
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): any;
}

export function rawRequest(base: string, rawPath: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<RawResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: rawPath, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Sends `head` (request line and headers, without the blank line) and `body` as bytes on a new
 * connection, exactly as given (any Host, none, an absolute-form target, HTTP/1.0), and reads
 * the answer until the server closes the connection (`Connection: close` is added).
 */
export function rawExchange(base: string, head: string, body = ''): Promise<RawResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => {
      const length = body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
      socket.end(`${head}\r\n${length}Connection: close\r\n\r\n${body}`);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const lines = all
        .subarray(0, split === -1 ? all.length : split)
        .toString('latin1')
        .split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
      const headers: http.IncomingHttpHeaders = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      let bytes = split === -1 ? Buffer.alloc(0) : all.subarray(split + 4);
      if (/chunked/i.test(String(headers['transfer-encoding'] ?? ''))) {
        const parts: Buffer[] = [];
        for (let at = 0; ; ) {
          const nl = bytes.indexOf('\r\n', at);
          const size = parseInt(bytes.subarray(at, nl).toString('latin1'), 16);
          if (!(size > 0)) break;
          parts.push(bytes.subarray(nl + 2, nl + 2 + size));
          at = nl + 2 + size + 2;
        }
        bytes = Buffer.concat(parts);
      }
      const payload = bytes.toString('utf8');
      resolve({ status, headers, text: payload, json: () => JSON.parse(payload) });
    });
  });
}
