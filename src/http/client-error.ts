/**
 * Requests that Node's HTTP parser refuses before any route sees them: a request target that
 * is not a path (`GET api/health`), a malformed request line or header, headers past
 * Node's size limit, a request not received in time. Node's own answer is a bare status line
 * without a body; here it is the service's error shape (spec: Errors), a JSON `{ "detail" }`,
 * like every other rejection, and the connection is closed (the parser cannot go on).
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { answerOf, HttpError, type HttpErrorCode } from './errors.js';

/** What the parser reported, by Node's error code; anything else is a 400 `malformed_request`. */
const ANSWERS: Readonly<Record<string, readonly [HttpErrorCode, string]>> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', `the request line and headers are larger than ${http.maxHeaderSize} bytes`],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['chunk_extensions_too_large', 'chunk extensions too large'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'the request was not received in time'],
};

/**
 * The server's `clientError` listener (`server.on('clientError', answerClientError)`).
 * Mirrors Node's default: an answer only when the socket is writable and no answer to an
 * earlier request on it has started; then the socket is destroyed. The answer is the
 * catalogue's (errors.ts): `{ detail, code }`, the parser's error as `cause`.
 * @param onAnswer called with each answer written (the answer recorder, answer-recorder.ts).
 */
export function answerClientError(err: Error & { code?: string; reason?: string }, socket: Duplex, onAnswer?: (status: number, contentType: string, body: string) => void): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && err.code !== 'ECONNRESET' && !inFlight?.headersSent) {
    const [code, detail] = ANSWERS[err.code ?? ''] ?? ['malformed_request', `malformed HTTP request: ${err.reason ?? err.message}`.replace(/[\r\n]+/g, ' ')];
    const { status, body: json } = answerOf(new HttpError(code, detail, { cause: err }));
    const body = JSON.stringify(json);
    const type = 'application/json; charset=utf-8';
    socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: ${type}\r\n` + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    onAnswer?.(status, type, body);
  }
  socket.destroy();
}
