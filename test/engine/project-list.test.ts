/**
 * The project list's reads (src/engine/project-list.ts): concurrent requests at one store change
 * share one read, and a request at a later change never gets a read started before it (a read
 * in flight may have listed the store before a project.json was written: served, it answered a
 * cut project.json with 200 in the store-shapes test under load).
 *
 * The runner here hands out reads the test settles by hand, so the order of events is the
 * test's: the store's own worker pool cannot be made to run late on purpose.
 */
import { describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/bus/bus.js';
import { ProjectList } from '../../src/engine/project-list.js';
import type { StoreAccess } from '../../src/engine/read-store-file.js';
import type { SynthesisRunner } from '../../src/engine/runner.js';
import type { ProjectListing } from '../../src/engine/store-reads.js';

/** A listing with one project whose title is `title`. */
function listing(title: string): ProjectListing {
  const json = JSON.stringify([{ id: 'p1', title }]);
  const one = JSON.stringify({ id: 'p1', title });
  const start = json.indexOf(one);
  return { body: Buffer.from(json), entries: [{ kind: 'ok', id: 'p1', start, end: start + one.length }], problem: null } as unknown as ProjectListing;
}

function setup() {
  const reads: ((l: ProjectListing) => void)[] = [];
  const runner = {
    run: () => Promise.reject(new Error('not used')),
    read: () => new Promise<ProjectListing>((resolve) => reads.push(resolve)),
  } as unknown as SynthesisRunner;
  const bus = { publish: () => undefined } as unknown as EventBus;
  const list = new ProjectList({ access: {} as StoreAccess, runner, bus, nonce: 'n', log: () => undefined });
  return { list, reads };
}

const titleOf = (l: { body: { body: Buffer } }) => (JSON.parse(l.body.body.toString()) as { title: string }[])[0]?.title;

describe('the project list', () => {
  it('shares one read among the requests at one change', async () => {
    const { list, reads } = setup();
    const a = list.at(1);
    const b = list.at(1);
    expect(reads).toHaveLength(1);
    reads[0]?.(listing('first'));
    expect(titleOf(await a)).toBe('first');
    expect(await b).toBe(await a);
    // Kept while the store has not changed.
    expect(await list.at(1)).toBe(await a);
    expect(reads).toHaveLength(1);
  });

  it('reads again for a later change, even while a read of an earlier one is in flight', async () => {
    const { list, reads } = setup();
    const before = list.at(1);
    // The store changed (a project.json written) while the first read runs.
    const after = list.at(2);
    expect(reads).toHaveLength(2);
    // The later read finishes first; the earlier one, which listed the old file, after it.
    reads[1]?.(listing('new'));
    reads[0]?.(listing('old'));
    expect(titleOf(await after)).toBe('new');
    expect(titleOf(await before)).toBe('old');
    // The newer list is the one kept: the late, older read does not replace it.
    expect(titleOf(await list.at(2))).toBe('new');
    expect(reads).toHaveLength(2);
  });
});
