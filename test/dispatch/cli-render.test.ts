import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, copySampleStore, projectDir, readJson, readReceipts, removeStore, runCli } from './helpers.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let store: string;
beforeAll(assertBuilt);
beforeEach(() => {
  store = copySampleStore();
});
afterEach(() => removeStore(store));

describe('dispatch tool: rendering a take', () => {
  it('renders a new take of a named shot with the default model, parented on the newest take', async () => {
    const result = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010']);

    expect(result.code).toBe(0);
    expect(result.stderr).toEqual([]);
    expect(result.stdout[0]).toBe('plan: project=harbor-lights shot=sh010 model=local-testsrc-v1 parent=tk_0004 dry_run=false');
    expect(result.stdout).toContain('render: 25%');
    expect(result.stdout).toContain('render: 100%');
    expect(result.stdout.at(-2)).toMatch(/^wrote take tk_0009 \(media\/tk_0009\.png, \d+ bytes\)$/);
    expect(result.stdout.at(-1)).toBe('done');

    const dir = projectDir(store, 'harbor-lights');
    const take = readJson(path.join(dir, 'takes', 'tk_0009.json'));
    expect(take).toEqual({
      take_id: 'tk_0009',
      shot_id: 'sh010',
      // sh010 has tk_0001 <- tk_0002 <- tk_0004 and the sibling tk_0003; tk_0004 is newest.
      parent_take_id: 'tk_0004',
      model: 'local-testsrc-v1',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      media: 'media/tk_0009.png',
    });
    // No temp file is left behind in takes/.
    expect(fs.readdirSync(path.join(dir, 'takes')).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('writes a real PNG that pngjs decodes', async () => {
    const result = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010']);
    expect(result.code).toBe(0);

    const bytes = fs.readFileSync(path.join(projectDir(store, 'harbor-lights'), 'media', 'tk_0009.png'));
    expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    expect(bytes.length).toBeGreaterThan(500);
    expect(result.stdout).toContain(`wrote take tk_0009 (media/tk_0009.png, ${bytes.length} bytes)`);
    const image = PNG.sync.read(bytes);
    expect([image.width, image.height]).toEqual([320, 180]);
    // Not a blank frame: the colour bars give many distinct pixel values.
    const colours = new Set<number>();
    for (let i = 0; i < image.data.length; i += 4) colours.add(image.data.readUInt32BE(i));
    expect(colours.size).toBeGreaterThan(8);
  });

  it('gives each take its own frame and chains a second take onto the first', async () => {
    const first = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh030']);
    const second = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh030']);
    expect([first.code, second.code]).toEqual([0, 0]);

    const dir = projectDir(store, 'harbor-lights');
    // sh030 had no take: the first is a root take, the second its child.
    expect(readJson(path.join(dir, 'takes', 'tk_0009.json')).parent_take_id).toBeNull();
    expect(first.stdout[0]).toContain('parent=none');
    expect(readJson(path.join(dir, 'takes', 'tk_0010.json')).parent_take_id).toBe('tk_0009');
    const a = fs.readFileSync(path.join(dir, 'media', 'tk_0009.png'));
    const b = fs.readFileSync(path.join(dir, 'media', 'tk_0010.png'));
    expect(a.equals(b)).toBe(false);
  });

  it('warns about a model that is not available and still renders with the local backend', async () => {
    const result = await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010', '--model', 'veo-3']);

    expect(result.code).toBe(0);
    expect(result.stderr).toEqual(['warning: model veo-3 is not available locally; rendering with the local-testsrc-v1 backend']);
    const dir = projectDir(store, 'harbor-lights');
    expect(readJson(path.join(dir, 'takes', 'tk_0009.json')).model).toBe('local-testsrc-v1');
    expect(readReceipts(store, 'harbor-lights').at(-1)).toMatchObject({
      argv: ['--project', 'harbor-lights', '--shot', 'sh010', '--model', 'veo-3'],
      model: 'local-testsrc-v1',
      outcome: 'rendered',
      take_id: 'tk_0009',
    });
  });

  it('accepts the default model named explicitly without a warning', async () => {
    const result = await runCli(store, ['--project', 'night-market', '--shot', 'sh010', '--model', 'local-testsrc-v1']);
    expect(result.code).toBe(0);
    expect(result.stderr).toEqual([]);
    expect(result.stdout[0]).toBe('plan: project=night-market shot=sh010 model=local-testsrc-v1 parent=tk_0003 dry_run=false');
  });

  it('appends exactly one receipt line with every member', async () => {
    const before = readReceipts(store, 'harbor-lights').length;
    await runCli(store, ['--project', 'harbor-lights', '--shot', 'sh010']);

    const receipts = readReceipts(store, 'harbor-lights');
    expect(receipts).toHaveLength(before + 1);
    const receipt = receipts.at(-1);
    expect(receipt).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      argv: ['--project', 'harbor-lights', '--shot', 'sh010'],
      project: 'harbor-lights',
      shot: 'sh010',
      model: 'local-testsrc-v1',
      dry_run: false,
      outcome: 'rendered',
      take_id: 'tk_0009',
    });
  });
});
