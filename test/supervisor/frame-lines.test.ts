/**
 * Line framing of a real child's stdout (spec: Events, "each line on the child's stdout":
 * trailing newline removed, undecodable bytes replaced), with the byte bound on one line.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { frameLines, LineTurns, type FramedLine } from '../../src/supervisor/frame-lines.js';

/** One budget for the streams of this file, as one supervisor has. */
const turns = new LineTurns();
import { fixture } from '../helpers/service.js';

/** Runs a fixture script and frames its stdout with `maxBytes`; resolves once both are done. */
async function frameFixture(script: string, args: string[], maxBytes: number): Promise<FramedLine[]> {
  const child = spawn(process.execPath, [fixture(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const lines: FramedLine[] = [];
  await frameLines(turns, child.stdout, maxBytes, (l) => lines.push(l));
  const [code] = await exited;
  expect(code).toBe(0);
  return lines;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('frameLines on odd-output.mjs', () => {
  it('replaces invalid UTF-8, strips CRLF, delivers the empty line and the last line without newline, numbered from 1', async () => {
    const lines = await frameFixture('odd-output.mjs', [], 16 * 1024);

    expect(lines).toEqual([
      { text: 'bad \uFFFD\uFFFD bytes', number: 1, cut: false },
      { text: 'crlf line', number: 2, cut: false },
      { text: '', number: 3, cut: false },
      { text: 'no newline at the end', number: 4, cut: false },
    ]);
  });

  it('cuts a line longer than the bound to exactly the bound, flags it, and keeps the lines around it', async () => {
    const lines = await frameFixture('odd-output.mjs', ['--long', '1500'], 1000);

    expect(lines.map((l) => l.number)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(lines.map((l) => l.cut)).toEqual([false, false, false, true, true, false]);
    expect(lines[3]!.text).toBe('x'.repeat(1000));
    // The "y" line has 1499 "y" then "é": the bound falls inside the "y" run.
    expect(lines[4]!.text).toBe('y'.repeat(1000));
    expect(lines[5]!.text).toBe('no newline at the end');
    expect(lines[0]!.text).toBe('bad \uFFFD\uFFFD bytes');
  });

  it('does not cut a line of exactly the bound, and backs a cut off to a character boundary', async () => {
    // Bound 1000: the "x" line is exactly 1000 bytes; in the "y" line "é" occupies bytes
    // 999 and 1000, so the bound falls between its two bytes.
    const lines = await frameFixture('odd-output.mjs', ['--long', '1000'], 1000);

    expect(lines[3]).toEqual({ text: 'x'.repeat(1000), number: 4, cut: false });
    expect(lines[4]).toEqual({ text: 'y'.repeat(999), number: 5, cut: true });
    expect(lines[5]).toEqual({ text: 'no newline at the end', number: 6, cut: false });
  });

  it('cuts a line that spans many pipe chunks to exactly the bound', async () => {
    // 300 000 bytes cross several 64 KiB pipe reads; the bound falls in the second one.
    const lines = await frameFixture('odd-output.mjs', ['--long', '300000'], 70_000);

    expect(lines).toHaveLength(6);
    expect(lines[3]!.cut).toBe(true);
    expect(bytes(lines[3]!.text)).toBe(70_000);
    expect(lines[3]!.text).toBe('x'.repeat(70_000));
    expect(lines[4]!.cut).toBe(true);
    expect(lines[4]!.text).toBe('y'.repeat(70_000));
    expect(lines[5]).toEqual({ text: 'no newline at the end', number: 6, cut: false });
  });
});

describe('frameLines: a cut never splits a multi-byte character', () => {
  // U+1F600 is four bytes (F0 9F 98 80): a bound after its first, second or third byte
  // must drop the whole character.
  it.each([1, 2, 3])('four-byte character, bound %i bytes into it', async (into) => {
    const lines = await frameFixture('gen-split-char.mjs', ['--prefix', '300', '--char', '\u{1F600}'], 300 + into);

    expect(lines).toEqual([
      { text: 'y'.repeat(300), number: 1, cut: true },
      { text: 'after', number: 2, cut: false },
    ]);
  });

  it('four-byte character ending exactly at the bound is kept whole', async () => {
    const lines = await frameFixture('gen-split-char.mjs', ['--prefix', '300', '--char', '\u{1F600}'], 304);

    expect(lines[0]).toEqual({ text: `${'y'.repeat(300)}\u{1F600}`, number: 1, cut: true });
    expect(bytes(lines[0]!.text)).toBe(304);
  });

  it('when the character straddles two pipe chunks at the bound', async () => {
    // The child writes 300 "y" and the first byte of "é", then waits for a byte on its stdin
    // before writing the second byte: the two bytes reach frameLines in separate chunks.
    const child = spawn(process.execPath, [fixture('gen-split-char.mjs'), '--prefix', '300', '--split', '1'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const exited = once(child, 'exit');
    let received = 0;
    const lines: FramedLine[] = [];
    const framed = frameLines(turns, child.stdout, 301, (l) => lines.push(l));
    child.stdout.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received === 301) child.stdin.end('go');
    });
    await framed;
    await exited;

    expect(lines).toEqual([
      { text: 'y'.repeat(300), number: 1, cut: true },
      { text: 'after', number: 2, cut: false },
    ]);
  });
});

describe('frameLines: order and numbering', () => {
  it('delivers 5000 lines in order, numbered 1..5000', async () => {
    const lines = await frameFixture('print-lines.mjs', ['--out', '5000', '--err', '0'], 1024);

    expect(lines).toHaveLength(5000);
    lines.forEach((l, i) => {
      expect(l).toEqual({ text: `out ${i + 1}`, number: i + 1, cut: false });
    });
  });
});

describe('frameLines: one budget per event-loop turn, shared by every stream', () => {
  it('four children flooding at once: at most 512 lines a turn in all (a turn counted by setImmediate), each stream in order', async () => {
    const STREAMS = 4;
    const LINES = 20_000;
    // Turns are counted by a setImmediate chain; a window between two counts can hold the end
    // of one budget and the whole of the next, hence 2 × 512.
    let turn = 0;
    let counting = true;
    const countTurns = () => {
      turn++;
      if (counting) setImmediate(countTurns);
    };
    setImmediate(countTurns);
    const perTurn = new Map<number, number>();
    const byStream: FramedLine[][] = [];
    const runs: Promise<void>[] = [];
    for (let s = 0; s < STREAMS; s++) {
      const child = spawn(process.execPath, [fixture('print-lines.mjs'), '--out', String(LINES), '--err', '0'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: FramedLine[] = [];
      byStream.push(lines);
      runs.push(
        frameLines(turns, child.stdout, 1024, (l) => {
          lines.push(l);
          perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
        }),
      );
    }
    await Promise.all(runs);
    counting = false;

    for (const lines of byStream) {
      expect(lines).toHaveLength(LINES);
      expect(lines.every((l, i) => l.number === i + 1 && l.text === `out ${i + 1}`)).toBe(true);
    }
    const most = Math.max(...perTurn.values());
    console.log(`frame-lines: ${STREAMS} × ${LINES.toLocaleString('en')} lines in ${perTurn.size} turns, at most ${most} lines in one turn`);
    expect(most).toBeLessThanOrEqual(2 * 512);
  });
});
