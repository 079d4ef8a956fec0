/** Store-file JSON within CONSOLE_STORE_JSON_MAX_DEPTH, depth found by a byte scan before parsing (walking the value costs 5x); errors give line and column, never V8's message, which quotes the text. */
import { printParseErrorCode, visit } from 'jsonc-parser';
import { problem, type StoreRead } from './store-read.js';

/** Parses a store file's bytes or text: its value, or a problem at the syntax error or first container past the depth bound. */
export function parseStoreJson(text: Buffer | string, maxDepth: number): StoreRead<unknown> {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const tooDeep = offsetPastDepth(bytes, maxDepth);
  if (tooDeep !== -1) {
    return problem('content', `nested deeper than ${maxDepth} levels at ${lineColumn(bytes, tooDeep)}, CONSOLE_STORE_JSON_MAX_DEPTH`, 'flatten it');
  }
  let s: string;
  try {
    s = typeof text === 'string' ? text : text.toString('utf8');
  } catch {
    // Past V8's longest string (some hundreds of MB), only with a raised byte bound.
    return problem('file', 'too large to be read as text', 'make it smaller');
  }
  let value: unknown;
  try {
    value = JSON.parse(s);
  } catch {
    return problem('content', `invalid JSON ${syntaxErrorAt(s)}`, 'fix the JSON syntax');
  }
  // Valid JSON nests exactly as its brackets outside strings do: the scan above bounded it.
  return { kind: 'ok', value };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** The byte offset of the first `[` or `{` opening level `max + 1`, or -1; brackets in strings do not count (UTF-8 safe: no byte of a multi-byte character is ASCII). */
export function offsetPastDepth(bytes: Uint8Array, max: number): number {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (c === QUOTE) {
      for (i++; i < bytes.length; i++) {
        const d = bytes[i] as number;
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return i;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
}

/** `line L column C` of a byte offset, both 1-based, the column in characters. */
function lineColumn(bytes: Buffer, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = bytes.indexOf(0x0a); i !== -1 && i < offset; i = bytes.indexOf(0x0a, i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `line ${line} column ${bytes.toString('utf8', lineStart, offset).length + 1}`;
}

/** `at line L column C (what was expected)` for the first syntax error of `text`, both 1-based. */
function syntaxErrorAt(text: string): string {
  let at: { offset: number; code: string } | undefined;
  visit(
    text,
    {
      onError: (error, offset) => {
        at ??= { offset, code: printParseErrorCode(error) };
      },
    },
    { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false },
  );
  // JSON.parse refused it; jsonc-parser is laxer only on odd escapes: say where the text ends.
  const offset = at?.offset ?? text.length;
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  const what = at ? `: ${at.code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}` : '';
  return `at line ${line} column ${offset - lineStart + 1}${what}`;
}
