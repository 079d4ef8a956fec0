/**
 * A raw HTTP/1.1 client over keep-alive connections for the reliability tests: the path is
 * sent exactly as given (no `..` resolution, no added headers, as test/helpers/raw.ts), and
 * many requests share a few sockets so thousands of them take seconds.
 */
import http from 'node:http';

/** One request as generated: the path is sent byte for byte (Node refuses only bytes outside 0x21-0xff). */
export interface RawReq {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
}

/** What came back. `text` is empty for an endless event stream (dropped after its headers). */
export interface RawRes {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  /** True when the answer was an event stream that the client cut after the headers. */
  readonly streamCut: boolean;
  /** True when the server closed the connection before the end of the body. */
  readonly aborted?: boolean;
}

/** A pool of keep-alive connections to one service. */
export class KeepAliveClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;
  /** Requests sent, retries of requests that met a socket the server had just closed excluded. */
  sent = 0;
  /** Requests sent again after such a socket. */
  retried = 0;

  constructor(base: string, sockets = 8) {
    const u = new URL(base);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  /** Sends one request and reads its whole answer (an event stream only up to its headers). */
  async send(r: RawReq): Promise<RawRes> {
    this.sent++;
    try {
      return await this.once(r);
    } catch (err) {
      // A keep-alive socket that the server closed just as the request went out: the request
      // never reached it (Node's documented retry case); send it once more on a new socket.
      if ((err as { reused?: boolean }).reused) {
        this.retried++;
        return this.once(r);
      }
      throw err;
    }
  }

  /** Sends `reqs` over the pool, at most `concurrency` at once; answers in request order. */
  async sendAll(reqs: readonly RawReq[], concurrency = 8): Promise<RawRes[]> {
    const out: RawRes[] = new Array(reqs.length);
    let next = 0;
    const worker = async () => {
      while (next < reqs.length) {
        const i = next++;
        out[i] = await this.send(reqs[i] as RawReq);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, reqs.length) }, worker));
    return out;
  }

  close(): void {
    this.agent.destroy();
  }

  private once(r: RawReq): Promise<RawRes> {
    return new Promise((resolve, reject) => {
      let answered = false;
      const headers: Record<string, string> = { ...r.headers };
      if (r.body !== undefined && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) {
        headers['content-length'] = String(r.body.length);
      }
      const req = http.request({ host: this.host, port: this.port, method: r.method, path: r.path, headers, agent: this.agent }, (res) => {
        answered = true;
        const type = String(res.headers['content-type'] ?? '');
        if (r.method === 'GET' && type.startsWith('text/event-stream')) {
          // An endless stream: its status and headers are the answer; the socket is dropped.
          res.destroy();
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '', streamCut: true });
          return;
        }
        const chunks: Buffer[] = [];
        const done = (aborted: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), streamCut: false, aborted });
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(false));
        // The server cut the answer before its end: reported, never mistaken for a whole body.
        res.on('close', () => {
          if (!res.complete) done(true);
        });
      });
      req.on('error', (err) => {
        // An early answer (413 before the body was read) can be followed by a write error.
        if (answered) return;
        reject(Object.assign(err, { reused: req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET' }));
      });
      req.end(r.body);
    });
  }
}
