/**
 * Piscina worker: answers one synthesis task (episodes, scenes, beats, takes, lineage).
 * Each worker thread keeps the indexes of the projects it served last, keyed by store
 * generation, so only the first task after a change reads the project from disk.
 */
import { loadProjectIndex, type ProjectIndex } from '../engine/project-index.js';
import { synthesize } from '../engine/synthesize.js';
import type { SynthesisResult, SynthesisTask } from '../engine/synthesis-task.js';
import { moving } from './transfer.js';

/** Projects kept per thread; least recently used go first. */
const MAX_CACHED_PROJECTS = 8;

const cache = new Map<string, { generation: number; index: ProjectIndex }>();

export default function synthesizeTask(task: SynthesisTask): SynthesisResult {
  const key = `${task.access.root}\0${task.projectId}`;
  let entry = cache.get(key);
  if (entry === undefined || entry.generation !== task.generation) {
    entry = { generation: task.generation, index: loadProjectIndex(task.access, task.projectId) };
  }
  cache.delete(key);
  cache.set(key, entry);
  if (cache.size > MAX_CACHED_PROJECTS) cache.delete(cache.keys().next().value as string);
  const result = synthesize(entry.index, task.query, task.takeStates);
  return moving(result, result.ok ? [result.body] : []);
}
