/**
 * A job's line as an event (service-spec.md §Events): its severity, detail and payload, in one place for
 * both sides of the job I/O thread. On the SQLite back end the thread encodes each line's JSON after its
 * id and time ({@link lineTail}); the main thread takes those (bus.ts `publishEncoded`), and the event writer thread
 * joins them (bus-options.ts LineRow).
 */
import { eventTail } from '../bus/event-json.js';
import type { Severity } from '../bus/event.js';
import { transition } from './job-state.js';
import { GENERATION_SCOPE } from './running-job.js';

/** Payload of every line event: one frozen object, so the bus reuses its JSON. */
export const LINE_PAYLOAD = Object.freeze({ source: 'dispatch_cli' });
const LINE_PAYLOAD_JSON = JSON.stringify(LINE_PAYLOAD);

const RUNNING = Object.freeze({ state: 'running' as const });
/** Severity of a running job's line on `stream` (0 stdout, 1 stderr), from the state table (job-state.ts). */
export const lineSeverity = (stream: 0 | 1): Severity => transition(RUNNING, { kind: stream === 0 ? 'stdout-line' : 'stderr-line' }).severity;
/** Severities of a running job's lines by stream, taken once from the table. */
export const LINE_SEVERITIES: readonly [Severity, Severity] = Object.freeze([lineSeverity(0), lineSeverity(1)] as const);

/** `<proposalId> stdout line 3`, with ` (cut at <max> bytes)` when bytes past `maxBytes` were dropped. */
export function lineDetail(proposalId: string, stream: 0 | 1, number: number, cut: boolean, maxBytes: number): string {
  return `${proposalId} ${stream === 0 ? 'stdout' : 'stderr'} line ${number}${cut ? ` (cut at ${maxBytes} bytes)` : ''}`;
}

/** The line event's JSON after its id and time (event-json.ts eventTail), by definition: {@link LineEncoder} makes the same text faster. */
export function lineTail(proposalId: string, stream: 0 | 1, number: number, text: string, cut: boolean, maxBytes: number): string {
  return eventTail(LINE_SEVERITIES[stream], GENERATION_SCOPE, text, lineDetail(proposalId, stream, number, cut, maxBytes), LINE_PAYLOAD_JSON);
}

/** The JSON of `severity` and `scope`, up to the summary's value. */
const summaryPrefix = (stream: 0 | 1): string => `"severity":"${LINE_SEVERITIES[stream]}","scope":${JSON.stringify(GENERATION_SCOPE)},"summary":`;
const SUMMARY_PREFIX: readonly [string, string] = [summaryPrefix(0), summaryPrefix(1)];
const PAYLOAD_SUFFIX = `","payload":${LINE_PAYLOAD_JSON}}`;

/**
 * {@link lineTail} for one job, by the job I/O thread for each of its lines: everything but the text and the
 * line number is made once, so a line costs one JSON.stringify (a third of lineTail's time). The same text
 * (test/supervisor/line-event.test.ts).
 */
export class LineEncoder {
  /** `,"detail":"<proposalId> stdout line ` per stream: the detail's JSON string, left open for the number. */
  private readonly detailOpen: readonly [string, string];
  private readonly cutNote: string;

  constructor(proposalId: string, maxBytes: number) {
    const open = (stream: 0 | 1) => `,"detail":${JSON.stringify(lineDetail(proposalId, stream, 0, false, maxBytes).slice(0, -1)).slice(0, -1)}`;
    this.detailOpen = [open(0), open(1)];
    this.cutNote = lineDetail('', 0, 0, true, maxBytes).slice(' stdout line 0'.length);
  }

  /** The line's {@link lineTail}. */
  tail(stream: 0 | 1, number: number, text: string, cut: boolean): string {
    return SUMMARY_PREFIX[stream] + JSON.stringify(text) + this.detailOpen[stream] + number + (cut ? this.cutNote : '') + PAYLOAD_SUFFIX;
  }
}
