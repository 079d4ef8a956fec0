// Unit checks of the pieces the process tests cannot pin down cheaply, imported from source.
import path from 'node:path';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { isValidId, resolveStoreRoot } from '../../src/dispatch/index.js';
import { renderTestPattern } from '../../src/dispatch/render-take.js';
import { compareTakeIds, formatTakeId, parseTakeNumber } from '../../src/dispatch/take-ids.js';
import { REPO_ROOT } from './helpers.js';

describe('resolveStoreRoot', () => {
  it('uses CONSOLE_DATA_DIR when set, resolved to an absolute path', () => {
    expect(resolveStoreRoot('/data/store', import.meta.url)).toBe('/data/store');
    expect(resolveStoreRoot('rel/store', import.meta.url)).toBe(path.resolve('rel/store'));
  });

  it('falls back to the bundled sample store two levels above the module', () => {
    const moduleUrl = new URL('../../dist/dispatch/cli.js', import.meta.url).href;
    expect(resolveStoreRoot(undefined, moduleUrl)).toBe(path.join(REPO_ROOT, 'sample-store') + path.sep);
    expect(resolveStoreRoot('  ', moduleUrl)).toBe(path.join(REPO_ROOT, 'sample-store') + path.sep);
  });
});

describe('isValidId', () => {
  it.each(['harbor-lights', 'sh010', 'tk_0001', 'a', 'v1.2', 'x'.repeat(128)])('accepts %s', (id) => {
    expect(isValidId(id)).toBe(true);
  });
  it.each(['', '../x', 'a..b', '.x', '-x', 'a/b', 'a\\b', 'a b', 'x'.repeat(129)])('rejects %j', (id) => {
    expect(isValidId(id)).toBe(false);
  });
});

describe('take ids', () => {
  it('pads to four digits and grows past them', () => {
    expect(formatTakeId(7)).toBe('tk_0007');
    expect(formatTakeId(12345)).toBe('tk_12345');
    expect(parseTakeNumber('tk_0007.png')).toBe(7);
    expect(parseTakeNumber('tk_0007.json')).toBe(7);
    expect(parseTakeNumber('.tk_0007.123.ab.tmp')).toBeNull();
    expect(parseTakeNumber('take7.png')).toBeNull();
  });

  it('orders by number, not by text', () => {
    expect(compareTakeIds('tk_9999', 'tk_10000')).toBeLessThan(0);
    expect(compareTakeIds('tk_0002', 'tk_0002')).toBe(0);
  });
});

describe('renderTestPattern', () => {
  it('is deterministic per take and differs between takes', () => {
    const progress: number[] = [];
    const a = renderTestPattern('tk_0009', 9, (p) => progress.push(p));
    expect(progress).toEqual([25, 50, 75, 100]);
    expect(renderTestPattern('tk_0009', 9).equals(a)).toBe(true);
    expect(renderTestPattern('tk_0010', 10).equals(a)).toBe(false);
    expect(PNG.sync.read(a).width).toBe(320);
  });
});
