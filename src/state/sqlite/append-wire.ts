/**
 * An append's rows as they cross to the event writer thread (event-writer.ts submit, event-writer-task.ts): numbers in
 * typed arrays and a few strings, not five strings per row. A structured clone copies each string on its own and the
 * thread receiving it allocates each again: for 512 job lines that was 2,560 strings a batch on either side (scopes,
 * severities and proposal ids repeated in every row), the main thread's serialising and the writer's deserialising and
 * collecting them a good part of what a line cost over the single-threaded build (bench/RESULTS.md, "CPU per line").
 */
import { SEVERITIES, type JobStart, type Severity } from '../../bus/event.js';
import { LineRow } from '../../bus/bus-options.js';
import { eventHead } from '../../bus/event-json.js';
import type { EventRow } from '../../bus/local-event-log.js';
import type { AppendRows } from './event-append.js';

/** {@link AppendRows} packed to cross threads ({@link packRows}, {@link unpackRows}). */
export interface WireRows {
  readonly ids: Float64Array;
  /** Each row's severity as its index in SEVERITIES. */
  readonly severities: Uint8Array;
  /** The distinct scopes, proposal ids and times of the append, which the rows below point into. */
  readonly words: string[];
  readonly scopes: Int32Array;
  /** -1 for a row about no proposal. */
  readonly proposals: Int32Array;
  /**
   * The time of a job line's row whose JSON is only the part after its head (bus-options.ts LineRow, made on the job
   * I/O thread): its whole JSON is made on the writer thread, the main thread never needing it; -1 for a whole JSON.
   */
  readonly heads: Int32Array;
  /** Every row's JSON (or the part after its head) back to back: row `i` ends at `ends[i]` (UTF-16 units). */
  readonly text: string;
  readonly ends: Uint32Array;
  readonly jobEnds: AppendRows['ends'];
  readonly starts: JobStart[];
}

const SEVERITY_CODE = new Map<Severity, number>(SEVERITIES.map((s, i) => [s, i]));

/** The index of each distinct word (the last one asked for checked first: a batch's rows repeat it in runs). */
class Words {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();
  private last: string | null = null;
  private lastAt = -1;

  of(word: string): number {
    if (word === this.last) return this.lastAt;
    let at = this.index.get(word);
    if (at === undefined) {
      at = this.list.length;
      this.list.push(word);
      this.index.set(word, at);
    }
    this.last = word;
    this.lastAt = at;
    return at;
  }
}

/**
 * Packs rows (ids ascending) for the writer thread. A job line's row whose JSON was not joined yet (LineRow) crosses
 * as its time and the part after its head, joined by {@link unpackRows}.
 */
export function packRows(rows: readonly EventRow[]): WireRows {
  const n = rows.length;
  const ids = new Float64Array(n);
  const severities = new Uint8Array(n);
  const scopes = new Int32Array(n);
  const proposals = new Int32Array(n);
  const heads = new Int32Array(n);
  const ends = new Uint32Array(n);
  const texts = new Array<string>(n);
  // Three dictionaries, one list once packed: each kind repeats in runs of its own.
  const scopeWords = new Words();
  const proposalWords = new Words();
  const timeWords = new Words();
  const jobEnds: AppendRows['ends'] = [];
  const starts: JobStart[] = [];
  let end = 0;
  for (let i = 0; i < n; i++) {
    const r = rows[i] as EventRow;
    ids[i] = r.id;
    severities[i] = SEVERITY_CODE.get(r.severity) as number;
    scopes[i] = scopeWords.of(r.scope);
    proposals[i] = r.proposalId == null ? -1 : proposalWords.of(r.proposalId);
    let text: string;
    if (r instanceof LineRow && !r.isJoined) {
      text = r.tail;
      heads[i] = timeWords.of(r.ts);
    } else {
      text = r.data;
      heads[i] = -1;
    }
    texts[i] = text;
    end += text.length;
    ends[i] = end;
    const g = r.guard;
    if (g === undefined) continue;
    if (g.start !== undefined) starts.push(g.start);
    if (g.end !== undefined) jobEnds.push({ i, job: g.job, end: g.end });
  }
  // One list: each dictionary's indexes move past those before it.
  const proposalBase = scopeWords.list.length;
  const timeBase = proposalBase + proposalWords.list.length;
  const list = scopeWords.list.concat(proposalWords.list, timeWords.list);
  for (let i = 0; i < n; i++) {
    if ((proposals[i] as number) >= 0) proposals[i] = (proposals[i] as number) + proposalBase;
    if ((heads[i] as number) >= 0) heads[i] = (heads[i] as number) + timeBase;
  }
  return { ids, severities, words: list, scopes, proposals, heads, text: texts.join(''), ends, jobEnds, starts };
}

/** The rows {@link packRows} packed, as the append executes them (event-append.ts), each row's whole JSON made. */
export function unpackRows(w: WireRows): AppendRows {
  const n = w.ids.length;
  const out: AppendRows = { ids: w.ids, severities: new Array(n), scopes: new Array(n), proposals: new Array(n), data: new Array(n), ends: w.jobEnds, starts: w.starts };
  const words = w.words;
  let start = 0;
  for (let i = 0; i < n; i++) {
    out.severities[i] = SEVERITIES[w.severities[i] as number] as Severity;
    out.scopes[i] = words[w.scopes[i] as number] as string;
    const p = w.proposals[i] as number;
    out.proposals[i] = p < 0 ? null : (words[p] as string);
    const end = w.ends[i] as number;
    const text = w.text.slice(start, end);
    const head = w.heads[i] as number;
    out.data[i] = head < 0 ? text : eventHead(w.ids[i] as number, words[head] as string) + text;
    start = end;
  }
  return out;
}
