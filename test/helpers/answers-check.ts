/**
 * Checks the answers the service recorded (src/http/answer-recorder.ts) against the OpenAPI
 * document it served: every response of the test suite, not only a sample. Used once per run by the global set-up's
 * teardown (answers-setup.ts), and by its own test (test/http/answers-check.test.ts).
 *
 * For each answer: its operation (route template and method; HEAD is its GET) must document
 * its status, its content type must be one the answer documents, and a JSON body must match the
 * schema (ajv, JSON Schema 2020-12, as OpenAPI 3.1 is). An answer given before any operation
 * was chosen (an unknown path, another method, a refused Host, a token…) must carry a code that
 * `components.responses` lists, with that response's status and schema. Every error body's
 * code must have the status the answer has (`ErrorCode`'s `x-status-of-code`). Required
 * headers of a documented answer (Allow, WWW-Authenticate, ETag…) must be there. CORS preflights
 * (OPTIONS) answer 204 without a body. An answer a write proxy relayed from its upstream is the
 * upstream's, not checked against the proxy's document (counted).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export is the plugin function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** The labels the recorder gives answers that no route matched (route-template.ts, answer-recorder.ts). */
const UNMATCHED = '(unmatched)';
const CLIENT_ERROR = '(client error)';
/** Routes of the ops page's static files (src/http/ops-page.ts): not in the document. */
const OPS_PAGE_ROUTES: ReadonlySet<string> = new Set(['/', '/ops/:file']);

/** One answer that does not match the document. */
export interface Mismatch {
  /** `METHOD route status`. */
  readonly answer: string;
  readonly problem: string;
  /** The recording file it came from. */
  readonly file: string;
}

export interface CheckReport {
  readonly files: number;
  /** Answers checked. */
  readonly answers: number;
  /** Answers whose body was too large to record (checked without their body). */
  readonly withoutBody: number;
  /** Last lines cut short by a service killed mid-write (not checked). */
  readonly cut: number;
  /**
   * Answers a write proxy relayed from its upstream (not checked here: they are the upstream's,
   * checked against its own document when the upstream is a service of the suite).
   */
  readonly relayed: number;
  readonly mismatches: readonly Mismatch[];
}

interface Meta {
  readonly m: string;
  readonly r: string;
  readonly s: number;
  readonly t: string | null;
  readonly n: number;
  readonly h?: Readonly<Record<string, string>>;
  readonly u?: true;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is walked as plain JSON */
type Json = any;

/** Validators of one document, compiled on first use. */
class DocumentChecks {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly id: string;

  constructor(
    readonly doc: Json,
    key: string,
  ) {
    addFormats(this.ajv);
    this.ajv.addFormat('binary', true);
    this.id = `https://console-backend.invalid/doc-${key}`;
    // The component schemas as one schema's $defs: `#/components/schemas/X` becomes `#/$defs/X`.
    this.ajv.addSchema({ $id: this.id, $defs: rewriteRefs(doc.components?.schemas ?? {}, '#/$defs/') });
  }

  /** Errors of `value` against `schema` (a schema object of the document), or null. */
  validate(cacheKey: string, schema: Json, value: unknown): string | null {
    let v = this.compiled.get(cacheKey);
    if (v === undefined) {
      v = this.ajv.compile(rewriteRefs(schema, `${this.id}#/$defs/`));
      this.compiled.set(cacheKey, v);
    }
    if (v(value)) return null;
    return (v.errors ?? [])
      .slice(0, 4)
      .map((e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`)
      .join('; ');
  }
}

function rewriteRefs(value: Json, prefix: string): Json {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, prefix));
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/') ? prefix + v.slice('#/components/schemas/'.length) : rewriteRefs(v, prefix);
  }
  return out;
}

/** The documented media type an answer's Content-Type falls under: exact, same type without parameters, or a wildcard. */
function documentedType(content: Record<string, unknown>, type: string | null): string | undefined {
  if (type === null) return undefined;
  const keys = Object.keys(content);
  const base = (t: string) => (t.split(';')[0] ?? '').trim().toLowerCase();
  return (
    keys.find((k) => k.toLowerCase() === type.toLowerCase()) ??
    keys.find((k) => base(k) === base(type)) ??
    keys.find((k) => base(k) === '*/*' || (base(k).endsWith('/*') && base(type).startsWith(base(k).slice(0, -1))))
  );
}

const isJsonType = (t: string | null) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(t ?? '');
const toDocPath = (route: string) => route.replace(/:([A-Za-z_$][\w$]*)/g, '{$1}');

/** Checks one answer; returns its problems. */
function checkAnswer(checks: DocumentChecks, meta: Meta, bodyText: string): string[] {
  const { doc } = checks;
  const problems: string[] = [];
  let body: unknown;
  if (bodyText !== '') {
    try {
      body = JSON.parse(bodyText);
    } catch {
      return [`a ${meta.t} body that is not JSON: ${bodyText.slice(0, 120)}`];
    }
  }
  if (meta.m === 'OPTIONS' && meta.s === 204) return meta.n === 0 ? [] : ['a CORS preflight answer with a body'];

  // Every error body's code has one status.
  const code = body !== null && typeof body === 'object' && typeof (body as { code?: unknown }).code === 'string' ? (body as { code: string }).code : undefined;
  if (meta.s >= 400 && code !== undefined) {
    const expected = doc.components?.schemas?.ErrorCode?.['x-status-of-code']?.[code];
    if (expected !== meta.s) problems.push(`code ${code} answered with ${meta.s}; the document gives it ${expected ?? 'no status'}`);
  }

  const item = meta.r === UNMATCHED || meta.r === CLIENT_ERROR ? undefined : doc.paths?.[toDocPath(meta.r)];
  // The ops page and its files (GET /, /ops/{file}) are not API: the document leaves them out
  // (README, "Ops page"); their error answers, if any, are still checked by code above.
  if (item === undefined && OPS_PAGE_ROUTES.has(meta.r)) return problems;
  if (meta.r !== UNMATCHED && meta.r !== CLIENT_ERROR && item === undefined) return [...problems, `route ${meta.r} is not in the document`];
  const op = item?.[meta.m === 'HEAD' ? 'get' : meta.m.toLowerCase()];

  let response: Json;
  let where: string;
  if (op === undefined) {
    // Answered before any operation was chosen: one of components.responses, by its code.
    if (code === undefined) {
      // A HEAD answer has no body, so no code to tell which of components.responses it is: it
      // must be one of their statuses (the GET of the same request carries the code).
      if (meta.m === 'HEAD') {
        const statuses = Object.values((doc.components?.responses ?? {}) as Record<string, { 'x-status'?: number }>).map((r) => r['x-status']);
        return statuses.includes(meta.s) ? problems : [...problems, `a HEAD answer ${meta.s} without an operation, and no entry of components.responses has that status`];
      }
      return [...problems, `an answer without an operation and without an error code (${meta.t ?? 'no content type'})`];
    }
    response = doc.components?.responses?.[code];
    where = `components.responses.${code}`;
    if (response === undefined) return [...problems, `code ${code} answered before any operation, and components.responses does not list it`];
    if (response['x-status'] !== meta.s) problems.push(`${where} says ${response['x-status']}, the answer is ${meta.s}`);
  } else {
    response = op.responses?.[String(meta.s)] ?? op.responses?.default;
    where = `${meta.m === 'HEAD' ? 'get' : meta.m.toLowerCase()} ${toDocPath(meta.r)} ${meta.s}`;
    if (response === undefined) return [...problems, `status ${meta.s} is not documented for the operation (documented: ${Object.keys(op.responses ?? {}).join(', ')})`];
  }

  for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, { required?: boolean }>)) {
    if (h.required === true && meta.h?.[name.toLowerCase()] === undefined) problems.push(`${where} requires the header ${name}; it is missing`);
  }
  // No body (HEAD, 304, 204, an empty answer): nothing more to check.
  if (meta.m === 'HEAD' || meta.n === 0) return problems;
  if (response.content === undefined) return [...problems, `a body (${meta.t ?? 'no content type'}) where ${where} documents none`];
  const type = documentedType(response.content, meta.t);
  if (type === undefined) return [...problems, `content type ${meta.t} is not documented for ${where} (documented: ${Object.keys(response.content).join(', ')})`];
  if (isJsonType(meta.t) && body !== undefined) {
    const schema = response.content[type]?.schema;
    if (schema !== undefined) {
      const errors = checks.validate(`${where} ${type}`, schema, body);
      if (errors !== null) problems.push(`the body does not match ${where} ${type}: ${errors}; body ${bodyText.slice(0, 200)}`);
    }
  }
  return problems;
}

/**
 * Checks every recording in `dir` against the documents there.
 * @returns what was checked, and every answer that does not match its document.
 */
export function checkRecordedAnswers(dir: string): CheckReport {
  const docs = new Map<string, DocumentChecks>();
  const docOf = (key: string): DocumentChecks => {
    let d = docs.get(key);
    if (d === undefined) {
      d = new DocumentChecks(JSON.parse(fs.readFileSync(path.join(dir, `doc-${key}.json`), 'utf8')), key);
      docs.set(key, d);
    }
    return d;
  };
  const mismatches: Mismatch[] = [];
  let files = 0;
  let answers = 0;
  let withoutBody = 0;
  let cut = 0;
  let relayed = 0;
  for (const name of fs
    .readdirSync(dir)
    .filter((f) => f.startsWith('answers-'))
    .sort()) {
    files++;
    const text = fs.readFileSync(path.join(dir, name), 'utf8');
    const lines = text.split('\n');
    // Each line is written whole with its line break: a last line without one was cut short by
    // a service killed (SIGKILL) in the middle of that write.
    if (lines.pop() !== '') cut++;
    let checks: DocumentChecks | undefined;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string;
      if (line === '') continue;
      if (i === 0) {
        const key = (JSON.parse(line) as { doc: string | null }).doc;
        if (key === null) {
          mismatches.push({ answer: '(file)', problem: 'answers recorded before the service named its document', file: name });
          break;
        }
        checks = docOf(key);
        continue;
      }
      const tab = line.indexOf('\t');
      let meta: Meta;
      try {
        meta = JSON.parse(line.slice(0, tab)) as Meta;
      } catch {
        mismatches.push({ answer: '(line)', problem: `line ${i + 1} is not a recorded answer`, file: name });
        continue;
      }
      if (meta.u === true) {
        relayed++;
        continue;
      }
      answers++;
      const bodyText = line.slice(tab + 1);
      if (bodyText === '' && meta.n > 0 && isJsonType(meta.t) && meta.m !== 'HEAD') withoutBody++;
      for (const problem of checkAnswer(checks as DocumentChecks, meta, bodyText)) mismatches.push({ answer: `${meta.m} ${meta.r} ${meta.s}`, problem, file: name });
    }
  }
  return { files, answers, withoutBody, cut, relayed, mismatches };
}

/** The report as text: counts, then each distinct mismatch once with how often it came. */
export function formatReport(report: CheckReport, max = 60): string {
  const byKey = new Map<string, { m: Mismatch; n: number }>();
  for (const m of report.mismatches) {
    const k = `${m.answer}: ${m.problem.replace(/; body .*$/s, '')}`;
    const e = byKey.get(k);
    if (e) e.n++;
    else byKey.set(k, { m, n: 1 });
  }
  const lines = [...byKey.entries()]
    .slice(0, max)
    .map(([k, { m, n }]) => `  ${k}${n > 1 ? ` (×${n})` : ''} [${m.file}]${m.problem.includes('; body ') ? `\n      ${m.problem.slice(m.problem.indexOf('; body ') + 2)}` : ''}`);
  return [
    `${report.mismatches.length} of ${report.answers} recorded answers (${report.files} services) do not match the OpenAPI document they were served with:`,
    ...lines,
    ...(byKey.size > max ? [`  … and ${byKey.size - max} more distinct ones`] : []),
  ].join('\n');
}
