// Calls to the service's API from the ops page: the bearer token (asked once, kept in this
// tab's session storage), JSON requests, and the event stream read with fetch and a
// ReadableStream (EventSource cannot send the Authorization header).

const TOKEN_KEY = 'console-api-token';

let token = sessionStorage.getItem(TOKEN_KEY);
/** Shows the token dialog; set by the app. Resolves with the token typed. */
let prompt = async () => {
  throw new Error('no token prompt');
};
/** The dialog's answer while it is open: every request refused meanwhile waits for it. */
let asking = null;

/** An answer other than 2xx: `status`, the service's `detail` and `code`, and the whole `body`. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && typeof body === 'object' && 'detail' in body ? body.detail : body;
    super(typeof detail === 'string' ? detail : `HTTP ${status}: ${JSON.stringify(detail)}`);
    this.status = status;
    this.code = body?.code ?? null;
    // GET /api/ready's 503 carries the checks beside its detail.
    this.body = body;
  }
}

/** Sets the function that asks for the token: `(wrong: boolean) => Promise<string>`. */
export function setTokenPrompt(fn) {
  prompt = fn;
}

/** Whether a token is kept. */
export function hasToken() {
  return token !== null;
}

/** Forgets the kept token. */
export function forgetToken() {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
}

function authHeaders(extra = {}) {
  return token === null ? { ...extra } : { ...extra, Authorization: `Bearer ${token}` };
}

/** After a 401: asks for a token (once for every request refused meanwhile) and keeps it. */
async function renewToken(wrong) {
  asking ??= prompt(wrong).finally(() => {
    asking = null;
  });
  token = await asking;
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** fetch with the token; a 401 asks for one and tries again. */
async function authorizedFetch(url, init = {}) {
  for (;;) {
    const sent = token;
    const res = await fetch(url, { ...init, headers: authHeaders(init.headers) });
    if (res.status !== 401) return res;
    await res.body?.cancel();
    // Another request may have renewed the token meanwhile: try that one first.
    if (token === sent) await renewToken(sent !== null);
  }
}

/**
 * A JSON call. Resolves with the parsed body of a 2xx answer.
 * @throws ApiError for any other status.
 */
export async function api(path, options = {}) {
  return (await apiAnswer(path, options)).body;
}

/**
 * A JSON call that also gives the answer's headers (a list's `X-Next-Cursor`).
 * Resolves with `{ body, headers }` for a 2xx answer.
 * @throws ApiError for any other status.
 */
export async function apiAnswer(path, { method = 'GET', body, signal } = {}) {
  const init = { method, signal, headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['content-type'] = 'application/json';
  }
  const res = await authorizedFetch(path, init);
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new ApiError(res.status, parsed);
  return { body: parsed, headers: res.headers };
}

/**
 * Reads `GET /api/events/stream` with `query` (severities, scopePrefix, proposalId, sinceId).
 * Batches of events go to `onEvents` as they arrive (one call per chunk read); `onState` hears
 * `live`, `reconnecting` and `closed`. After an error it resumes with `Last-Event-ID`, so no
 * event is lost or repeated. @returns `{ close() }`.
 */
export function openStream(query, { onEvents, onState = () => {} }) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (k === 'sinceId' || v === null || v === undefined) continue;
    for (const one of [v].flat()) params.append(k, one);
  }
  let lastId = query.sinceId ?? null;
  let retryMs = 2000;
  let closed = false;
  let controller = null;

  const run = async () => {
    while (!closed) {
      controller = new AbortController();
      try {
        const headers = lastId === null ? {} : { 'Last-Event-ID': String(lastId) };
        const res = await authorizedFetch(`/api/events/stream?${params}`, { headers, signal: controller.signal, cache: 'no-store' });
        if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
        onState('live');
        const parser = sseParser(
          (id, _data) => (lastId = id),
          (ms) => (retryMs = ms),
        );
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const events = parser(value);
          if (events.length > 0) onEvents(events);
        }
      } catch {
        // Aborted by close(), or the connection failed: resume below.
      }
      if (closed) break;
      onState('reconnecting');
      await new Promise((r) => setTimeout(r, retryMs));
    }
    onState('closed');
  };
  run();
  return {
    close() {
      closed = true;
      controller?.abort();
    },
  };
}

/**
 * A Server-Sent Events parser (the WHATWG rules this service's frames use: `id:`, `data:`,
 * `retry:`, comments, LF or CRLF). Feed it text chunks; it returns the events completed by each
 * chunk, parsed from their JSON data.
 */
function sseParser(onId, onRetry) {
  let buffer = '';
  let data = [];
  let id = null;
  return (chunk) => {
    buffer += chunk;
    const out = [];
    let start = 0;
    for (let nl = buffer.indexOf('\n', start); nl !== -1; nl = buffer.indexOf('\n', start)) {
      let line = buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length > 0) {
          if (id !== null) onId(id, data);
          try {
            out.push(JSON.parse(data.join('\n')));
          } catch {
            // Not an event of this service: skipped.
          }
        }
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
    }
    buffer = buffer.slice(start);
    return out;
  };
}
