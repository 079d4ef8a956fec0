import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, copySampleStore, projectDir, readJson, readReceipts, removeStore, runCli, snapshotTree } from './helpers.js';

let store: string;
beforeAll(assertBuilt);
beforeEach(() => {
  store = copySampleStore();
});
afterEach(() => removeStore(store));

describe('dispatch tool: --dry-run', () => {
  it('prints the plan and writes nothing but its receipt', async () => {
    const dir = projectDir(store, 'harbor-lights');
    const before = snapshotTree(dir);

    const result = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010', '--dry-run']);

    expect(result.code).toBe(0);
    expect(result.stderr).toEqual([]);
    expect(result.stdout).toEqual(['plan: project=harbor-lights shot=sh010 model=local-testsrc-v1 parent=tk_0004 dry_run=true', 'dry run: next take would be tk_0009; nothing written', 'done']);
    const after = snapshotTree(dir);
    const { 'receipts.jsonl': _receiptsAfter, ...restAfter } = after;
    const { 'receipts.jsonl': _receiptsBefore, ...restBefore } = before;
    expect(restAfter).toEqual(restBefore);
    expect(readReceipts(store, 'harbor-lights').at(-1)).toMatchObject({
      shot: 'sh010',
      dry_run: true,
      outcome: 'planned',
      take_id: null,
    });
  });
});

describe('dispatch tool: without --shot', () => {
  it('targets the first shot without a take, by episode, then order, then shot id', async () => {
    // In episode 1, sh060 (order 30) comes before sh030 (order 50) although its id sorts later.
    const result = await runCli(store, ['--project', 'harbor-lights']);

    expect(result.code).toBe(0);
    expect(result.stdout[0]).toBe('plan: project=harbor-lights shot=sh060 model=local-testsrc-v1 parent=none dry_run=false');
    expect(readJson(path.join(projectDir(store, 'harbor-lights'), 'takes', 'tk_0009.json'))).toMatchObject({
      shot_id: 'sh060',
      parent_take_id: null,
    });
  });

  it('says there is nothing to render once every shot has a take, and exits 0', async () => {
    // night-market: only sh030 lacks a take; the first run fills it.
    const first = await runCli(store, ['--project', 'night-market']);
    expect(first.code).toBe(0);
    expect(first.stdout[0]).toContain('shot=sh030');
    const takesBefore = fs.readdirSync(path.join(projectDir(store, 'night-market'), 'takes')).sort();

    const second = await runCli(store, ['--project', 'night-market']);

    expect(second.code).toBe(0);
    expect(second.stdout).toEqual(['nothing to render: every shot has a take', 'done']);
    expect(fs.readdirSync(path.join(projectDir(store, 'night-market'), 'takes')).sort()).toEqual(takesBefore);
    const receipts = readReceipts(store, 'night-market');
    expect(receipts).toHaveLength(2);
    expect(receipts[1]).toMatchObject({ shot: null, outcome: 'nothing_to_do', take_id: null, dry_run: false });
  });
});
