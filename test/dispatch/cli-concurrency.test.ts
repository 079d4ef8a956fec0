import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, copySampleStore, projectDir, readJson, readReceipts, removeStore, runCli } from './helpers.js';

const RUNS = 8;

let store: string;
beforeAll(assertBuilt);
beforeEach(() => {
  store = copySampleStore();
});
afterEach(() => removeStore(store));

describe('dispatch tool: concurrent runs', () => {
  it(`gives ${RUNS} simultaneous runs on one shot distinct takes and intact receipts`, async () => {
    const before = readReceipts(store, 'harbor-lights').length;

    const results = await Promise.all(Array.from({ length: RUNS }, () => runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010'])));

    expect(results.map((r) => r.code)).toEqual(Array(RUNS).fill(0));
    const written = results.map((r) => /^wrote take (tk_\d+) /.exec(r.stdout.at(-2) ?? '')?.[1]);
    const ids = new Set(written);
    expect(ids.size).toBe(RUNS);
    expect(ids.has(undefined)).toBe(false);

    const dir = projectDir(store, 'harbor-lights');
    for (const id of ids) {
      const take = readJson(path.join(dir, 'takes', `${String(id)}.json`));
      expect(take).toMatchObject({ take_id: id, shot_id: 'sh010', media: `media/${String(id)}.png` });
      expect(fs.statSync(path.join(dir, 'media', `${String(id)}.png`)).size).toBeGreaterThan(500);
    }
    expect(fs.readdirSync(path.join(dir, 'takes')).filter((n) => n.startsWith('.'))).toEqual([]);

    // readReceipts throws on any line that is not JSON, so interleaving would fail here.
    const receipts = readReceipts(store, 'harbor-lights').slice(before);
    expect(receipts).toHaveLength(RUNS);
    expect(new Set(receipts.map((r) => r.take_id))).toEqual(ids);
    for (const receipt of receipts) expect(receipt).toMatchObject({ outcome: 'rendered', shot: 'sh010' });
  });
});
