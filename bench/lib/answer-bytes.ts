/**
 * The service's answers, byte for byte, for the servers that stand in for it (P1's limit,
 * P7's floor): captured from a running service, written to a JSON file
 * ({path: {type, body (base64)}}) whose name a stand-in server gets as BENCH_BYTES_FILE.
 */
import fs from 'node:fs';

/** One answer of a stand-in server. */
export interface AnswerBytes {
  readonly type: string;
  readonly body: Buffer;
}

/**
 * GETs every path of `paths` from `url` and writes the answers to `file`.
 * @throws when a path does not answer 200.
 */
export async function captureAnswers(url: string, paths: readonly string[], file: string): Promise<void> {
  const bytes: Record<string, { type: string; body: string }> = {};
  for (const p of paths) {
    const r = await fetch(url + p);
    if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
    bytes[p] = { type: r.headers.get('content-type') ?? 'application/json', body: Buffer.from(await r.arrayBuffer()).toString('base64') };
  }
  fs.writeFileSync(file, JSON.stringify(bytes));
}

/** The answers of a file written by {@link captureAnswers}, by path (empty when `file` is unset). */
export function loadAnswers(file: string | undefined): Map<string, AnswerBytes> {
  const answers = new Map<string, AnswerBytes>();
  if (!file) return answers;
  const spec = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, { type: string; body: string }>;
  for (const [p, a] of Object.entries(spec)) answers.set(p, { type: a.type, body: Buffer.from(a.body, 'base64') });
  return answers;
}
