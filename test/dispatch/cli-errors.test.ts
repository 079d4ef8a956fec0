import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, copySampleStore, readReceipts, removeStore, runCli, snapshotTree } from './helpers.js';

let store: string;
beforeAll(assertBuilt);
beforeEach(() => {
  store = copySampleStore();
});
afterEach(() => removeStore(store));

describe('dispatch tool: errors exit 2 with one stderr line', () => {
  it.each([
    [['--project', '../x'], 'error: malformed project id "../x"'],
    [['--project', 'harbor-lights', '--shot', '../x'], 'error: malformed shot id "../x"'],
    [['--project', 'harbor..lights'], 'error: malformed project id "harbor..lights"'],
    [['--project', '/etc'], 'error: malformed project id "/etc"'],
    [['--project', '.hidden'], 'error: malformed project id ".hidden"'],
    [['--project', 'nope'], 'error: unknown project nope'],
    [['--project', 'old-pilot'], 'error: legacy project old-pilot: format 1 (project.yaml)'],
    [['--shot', 'sh010'], 'error: missing required flag --project'],
    [['--project', 'harbor-lights', '--bogus'], expect.stringMatching(/^error: Unknown option '--bogus'/)],
    [['--project', 'harbor-lights', 'sh010'], expect.stringMatching(/^error: Unexpected argument 'sh010'/)],
    [['--project', 'harbor-lights', '--model', 'two words'], 'error: malformed model name "two words"'],
  ])('%j leaves the store untouched', async (args, message) => {
    const before = snapshotTree(store);

    const result = await runCli(store, args);

    expect(result.code).toBe(2);
    expect(result.stdout).toEqual([]);
    expect(result.stderr).toEqual([message]);
    expect(snapshotTree(store)).toEqual(before);
  });

  it('says a format of another type is one, not a legacy format', async () => {
    const file = path.join(store, 'projects', 'night-market', 'project.json');
    fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), format: '2' }));
    const result = await runCli(store, ['--project', 'night-market']);
    expect(result.code).toBe(2);
    expect(result.stderr).toEqual(['error: project night-market: canonical field format has the wrong type (a string, expected an integer)']);
  });

  it('writes a failed receipt for an unknown shot of an existing project', async () => {
    const before = readReceipts(store, 'harbor-lights').length;

    const result = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh999']);

    expect(result.code).toBe(2);
    expect(result.stderr).toEqual(['error: unknown shot sh999 in project harbor-lights']);
    const receipts = readReceipts(store, 'harbor-lights');
    expect(receipts).toHaveLength(before + 1);
    expect(receipts.at(-1)).toMatchObject({
      argv: ['--project', 'harbor-lights', '--shot', 'sh999'],
      project: 'harbor-lights',
      shot: 'sh999',
      outcome: 'failed',
      take_id: null,
    });
  });
});
