/** Piscina worker for one synthesis task; each thread keeps recent project indexes, patched from the change log when it reaches back far enough. */
import { threadId } from 'node:worker_threads';
import { patchProjectIndex } from '../engine/index-patch.js';
import { loadProjectIndex, type MutableProjectIndex } from '../engine/project-index.js';
import { synthesize } from '../engine/synthesize.js';
import type { IndexLoad, SynthesisResult, SynthesisTask } from '../engine/synthesis-task.js';
import { moving } from './transfer.js';

/** Projects kept per thread; least recently used go first. */
const MAX_CACHED_PROJECTS = 8;

const cache = new Map<string, { generation: number; root: string; projectId: string; index: MutableProjectIndex }>();

export default function synthesizeTask(task: SynthesisTask): SynthesisResult {
  const key = `${task.access.root}\0${task.projectId}`;
  let entry = cache.get(key);
  let kind: IndexLoad['kind'] = 'cached';
  let filesRead = 0;
  if (entry === undefined || entry.generation < task.changes.since) {
    kind = 'full';
    entry = { generation: task.generation, root: task.access.root, projectId: task.projectId, index: loadProjectIndex(task.access, task.projectId, () => filesRead++) };
  } else if (entry.generation < task.generation) {
    const held = entry.generation;
    kind = 'patched';
    filesRead = patchProjectIndex(
      task.access,
      entry.index,
      task.changes.files.filter((f) => f.gen > held),
    );
    entry.generation = task.generation;
  }
  // A task of an older generation than the index held (another thread's turn) is answered
  // from the newer index: its answer is cached under the older generation, never served newer.
  cache.delete(key);
  cache.set(key, entry);
  const evicted: string[] = [];
  while (cache.size > MAX_CACHED_PROJECTS) {
    const [oldKey, old] = cache.entries().next().value as [string, { root: string; projectId: string }];
    cache.delete(oldKey);
    if (old.root === task.access.root) evicted.push(old.projectId);
  }
  const result = synthesize(entry.index, task.query, task.takeStates);
  const load: IndexLoad = { kind, filesRead, thread: threadId, held: entry.generation, evicted };
  return moving({ ...result, load }, result.ok ? [result.body] : []);
}
