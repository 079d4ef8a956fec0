/**
 * The store reads' own buffers (src/engine/read-store-file.ts): JSON reads go through the
 * thread's read buffer, so each file's value must be exactly its own whatever was read before
 * it (larger, smaller, past the buffer), the byte bound must hold below and above the buffer's
 * size, and bytes handed to a caller (`readStoreFileSync`) must not change with later reads.
 * And a file the listing showed as regular but swapped since (for a pipe, a link, an endless
 * device) is read without hanging and refused.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MKNOD } from '../helpers/hostile-files.js';
import { listStoreDirSync, readFolderEntryJsonSync, readStoreFileSync, readStoreJsonSync, storeAccess, type StoreFolder } from '../../src/engine/read-store-file.js';

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'console-read-store-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A JSON document of exactly `bytes` bytes (UTF-8), tagged `n`. */
function docOf(n: number, bytes: number): string {
  const head = JSON.stringify({ n, pad: '' });
  const text = `${head.slice(0, -2)}${'é'.repeat(Math.floor((bytes - head.length) / 2))}${'x'.repeat((bytes - head.length) % 2)}"}`;
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

function folderOf(rel: string, files: readonly string[]): StoreFolder {
  fs.mkdirSync(path.join(root, rel), { recursive: true });
  for (const [i, text] of files.entries()) fs.writeFileSync(path.join(root, rel, `f${String(i).padStart(3, '0')}.json`), text);
  const listed = listStoreDirSync(storeAccess(root, { fileMaxBytes: 1 << 30, jsonMaxDepth: 64 }), rel, rel);
  if (listed.kind !== 'ok') throw new Error(`cannot list ${rel}`);
  return listed.value;
}

describe('store reads through the thread’s read buffer', () => {
  it('read each listed file as exactly its own value, after larger and smaller ones, below, at and past 64 KiB', () => {
    const K = 1024;
    const sizes = [300, 200 * K, 40, 64 * K - 1, 64 * K, 64 * K + 1, 17, 130 * K, 5000, 90, 64 * K - 2, 33];
    const texts = sizes.map((b, n) => docOf(n, b));
    const access = storeAccess(root, { fileMaxBytes: 4 * 1024 * 1024, jsonMaxDepth: 64 });
    const folder = folderOf('sizes', texts);
    for (let round = 0; round < 2; round++) {
      folder.entries.forEach((entry, i) => {
        const r = readFolderEntryJsonSync(access, folder, entry);
        expect(r, `${entry.name} (${sizes[i]} bytes)`).toEqual({ kind: 'ok', value: JSON.parse(texts[i] as string) });
      });
      texts.forEach((text, i) => {
        expect(readStoreJsonSync(access, `sizes/${folder.entries[i]!.name}`, 'sizes')).toEqual({ kind: 'ok', value: JSON.parse(text) });
      });
    }
  });

  it('hold the byte bound below the buffer’s size: the bound itself is read, one byte more is refused, listed or not', () => {
    const access = storeAccess(root, { fileMaxBytes: 1024, jsonMaxDepth: 64 });
    const folder = folderOf('bound', [docOf(0, 1024), docOf(1, 1025), docOf(2, 70_000), docOf(3, 16)]);
    const outcomes = folder.entries.map((e) => readFolderEntryJsonSync(access, folder, e));
    const unlisted = folder.entries.map((e) => readStoreJsonSync(access, `bound/${e.name}`, 'bound'));
    for (const got of [outcomes, unlisted]) {
      expect(got.map((r) => r.kind)).toEqual(['ok', 'problem', 'problem', 'ok']);
      expect(got[1]).toMatchObject({ problem: { why: 'larger than 1024 bytes, CONSOLE_STORE_FILE_MAX_BYTES' } });
      expect(got[3]).toEqual({ kind: 'ok', value: { n: 3, pad: '' } });
    }
  });

  it('hand a caller bytes of its own: later reads do not change them', () => {
    const access = storeAccess(root, { fileMaxBytes: 4 * 1024 * 1024, jsonMaxDepth: 64 });
    const texts = [docOf(0, 500), docOf(1, 800)];
    const folder = folderOf('own', texts);
    const kept = readStoreFileSync(access, `own/${folder.entries[0]!.name}`, 'own');
    if (kept.kind !== 'ok') throw new Error('not read');
    expect(readFolderEntryJsonSync(access, folder, folder.entries[1]!)).toMatchObject({ kind: 'ok' });
    expect(readStoreJsonSync(access, `own/${folder.entries[1]!.name}`, 'own')).toMatchObject({ kind: 'ok' });
    expect(kept.value.toString('utf8')).toBe(texts[0]);
  });
});

describe('a listed file swapped after the listing', () => {
  it('is refused without hanging: a named pipe, a symbolic link, an endless device', () => {
    // Device nodes need root (CI runs as root): say so rather than skip.
    expect(MKNOD, 'mknod is not allowed here (run the tests as root): the endless device cannot be planted').toBe(true);
    const access = storeAccess(root, { fileMaxBytes: 1024, jsonMaxDepth: 64 });
    const folder = folderOf('swap', [docOf(0, 100), docOf(1, 100), docOf(2, 100)]);
    const [fifo, link, device] = folder.entries.map((e) => path.join(root, 'swap', e.name)) as [string, string, string];
    fs.writeFileSync(path.join(root, 'elsewhere.json'), docOf(9, 100));
    for (const f of [fifo, link, device]) fs.rmSync(f);
    execFileSync('mkfifo', [fifo]); // no writer: a blocking open would wait forever
    fs.symlinkSync(path.join(root, 'elsewhere.json'), link);
    execFileSync('mknod', [device, 'c', '1', '5']); // a copy of /dev/zero: endless
    const got = folder.entries.map((e) => readFolderEntryJsonSync(access, folder, e));
    expect(got.map((r) => r.kind)).toEqual(['problem', 'problem', 'problem']);
    // The pipe opened at once (O_NONBLOCK) and read nothing: an empty file's answer.
    expect(got[0]).toMatchObject({ problem: { level: 'content', why: 'invalid JSON at line 1 column 1: value expected' } });
    expect(got[1]).toMatchObject({ problem: { why: 'a symbolic link loop, or a link that changed while it was read' } });
    expect(got[2]).toMatchObject({ problem: { why: 'larger than 1024 bytes, CONSOLE_STORE_FILE_MAX_BYTES' } });
  });
});
