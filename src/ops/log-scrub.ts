// Keeps credentials out of log lines, whatever a caller logs: members named like a credential, then in the
// written line credential query parameters (also percent-encoded), URL userinfo and the service's secrets.

/** What a credential is replaced with in a log line. */
export const REDACTED = '[REDACTED]';

const CREDENTIAL_KEYS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'x-api-token',
  'x-auth-token',
  'token',
  'apitoken',
  'api_token',
  'password',
  'passwd',
  'secret',
]);

const CREDENTIAL_PARAMS = new Set([
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'api_token',
  'api_key',
  'apikey',
  'api-key',
  'auth',
  'password',
  'passwd',
  'pwd',
  'secret',
  'client_secret',
  'signature',
  'sig',
  // libpq's and node-postgres's connection parameters that hold or lead to a credential.
  'passfile',
  'sslpassword',
  'sslkey',
  'sslcert',
]);

const QUERY_PARAM = /([?&;])([^=&#;\s"'<>\\]*)=([^&#;\s"'<>\\]*)/g;
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>\\]+@/gi;

/** Nesting past which members are left as they are (log objects are shallow). */
const MAX_DEPTH = 8;

/** Scrubs log objects and strings. */
export class Scrubber {
  private readonly secrets: readonly RegExp[];

  /** @param secrets values never written (blank or null ones are ignored). */
  constructor(secrets: readonly (string | null | undefined)[] = []) {
    this.secrets = secrets.filter((s): s is string => typeof s === 'string' && s.length > 0).map(secretPattern);
  }

  /** A JSON line scrubbed; still JSON, as secrets are replaced only inside strings (a digit token must not touch `"level":30`). */
  text(s: string): string {
    let out = s;
    if (out.includes('?')) {
      out = out.replace(QUERY_PARAM, (all, delim: string, name: string) => (CREDENTIAL_PARAMS.has(decodeName(name)) ? `${delim}${name}=${REDACTED}` : all));
    }
    if (out.includes('://')) out = out.replace(USERINFO, `$1${REDACTED}@`);
    if (this.secrets.some((re) => out.search(re) !== -1)) {
      out = out.replace(JSON_STRING, (literal) => this.secrets.reduce((lit, re) => lit.replace(re, REDACTED), literal));
    }
    return out;
  }

  /** A plain message (a start-up error on stderr) scrubbed as {@link text}, secrets replaced anywhere. */
  plain(s: string): string {
    let out = s;
    if (out.includes('?')) {
      out = out.replace(QUERY_PARAM, (all, delim: string, name: string) => (CREDENTIAL_PARAMS.has(decodeName(name)) ? `${delim}${name}=${REDACTED}` : all));
    }
    if (out.includes('://')) out = out.replace(USERINFO, `$1${REDACTED}@`);
    for (const re of this.secrets) out = out.replace(re, REDACTED);
    return out;
  }

  /** `v` with credential-named members redacted through plain objects and arrays; `v` itself when nothing changed. */
  members<T>(v: T, depth = 0): T {
    if (v === null || typeof v !== 'object' || depth >= MAX_DEPTH) return v;
    if (Array.isArray(v)) {
      let copy: unknown[] | undefined;
      v.forEach((item, i) => {
        const s = this.members(item as unknown, depth + 1);
        if (s !== item) (copy ??= [...v])[i] = s;
      });
      return (copy ?? v) as T;
    }
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return v;
    let copy: Record<string, unknown> | undefined;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      const s = CREDENTIAL_KEYS.has(k.toLowerCase()) && item !== undefined && item !== null ? REDACTED : this.members(item, depth + 1);
      if (s !== item) (copy ??= { ...(v as Record<string, unknown>) })[k] = s;
    }
    return (copy ?? v) as T;
  }
}

/** A query parameter name decoded (`%74oken` is `token`), lower case. */
function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/** Matches `secret` with any of its characters percent-encoded (either case of hex digits). */
function secretPattern(secret: string): RegExp {
  let src = '';
  for (const ch of secret) {
    const bytes = [...Buffer.from(ch, 'utf8')].map((b) => `%${hexClass(b)}`).join('');
    src += `(?:${ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}|${bytes})`;
  }
  return new RegExp(src, 'g');
}

/** `[2][bB]` for 0x2b: the two hex digits of a byte, letters in either case. */
function hexClass(b: number): string {
  return [...b.toString(16).padStart(2, '0')].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join('');
}
