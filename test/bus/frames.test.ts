/**
 * Stored events' Server-Sent Events frames packed where they are stored (src/bus/frames.ts packEventFrames, the event
 * writer thread): byte for byte the frames the main thread would write (frameOf, encoded as UTF-8), in the shared
 * buffer when they fit and in a block of their own when not, whatever their JSON holds.
 */
import { describe, expect, it } from 'vitest';
import { frameOf, packEventFrames, unpackFrames } from '../../src/bus/frames.js';

/** JSON texts of every width of UTF-8: ASCII, 2, 3 and 4 bytes a character, a lone surrogate (encoded as U+FFFD), empty. */
const TEXTS = ['{"a":1}', '{"s":"café"}', '{"s":"日本語 ✓"}', '{"s":"🎬🎞"}', `{"s":"${'\ud800'}x"}`, '', `{"x":"${'y'.repeat(3000)}"}`];

function check(ids: number[], data: string[], shared?: SharedArrayBuffer): 'shared' | 'own' {
  const packed = packEventFrames(Float64Array.from(ids), data, shared);
  const block = unpackFrames(packed ?? (shared as SharedArrayBuffer));
  const frames = ids.map((id, i) => frameOf({ id, data: data[i] as string }));
  expect(Buffer.from(block.buf).equals(Buffer.from(frames.join(''), 'utf8'))).toBe(true);
  expect([...block.ids]).toEqual(ids);
  let end = 0;
  expect([...block.ends]).toEqual(frames.map((f) => (end += Buffer.byteLength(f))));
  return packed === null ? 'shared' : 'own';
}

describe('frames packed where the events are stored', () => {
  it('are the frames’ UTF-8 bytes, every width of character, in the shared buffer', () => {
    const ids = TEXTS.map((_, i) => 9_007_199_254_740_000 + i);
    expect(check(ids, TEXTS, new SharedArrayBuffer(64 * 1024))).toBe('shared');
    expect(check([1, 22, 333], ['', '{}', '{"ü":"ü"}'], new SharedArrayBuffer(4096))).toBe('shared');
  });

  it('go into a block of their own when the shared buffer may not hold them, and with none', () => {
    const data = Array.from({ length: 40 }, (_, i) => TEXTS[i % TEXTS.length] as string);
    const ids = data.map((_, i) => i + 1);
    // Each frame alone would fit: the bound on all of them does not.
    expect(check(ids, data, new SharedArrayBuffer(8 * 1024))).toBe('own');
    expect(check(ids, data)).toBe('own');
    expect(check([], [], new SharedArrayBuffer(16))).toBe('shared');
  });
});
