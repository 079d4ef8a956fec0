/**
 * The memory toggle event (spec: Events table, "memory toggle").
 */
import type { EventInput } from '../bus/event.js';
import { withExtra } from './decision.js';

/** Default scope of memory toggle events. */
export const MEMORY_SCOPE = 'engine/memory';

/**
 * Summary `Memory entry enabled: <id>` or `Memory entry disabled: <id>`, severity info,
 * payload entry_id, on, then the extra members (which cannot replace those two), detail null.
 */
export function memoryToggleEvent(entryId: string, on: boolean, scope: string, extra?: Readonly<Record<string, unknown>>): EventInput {
  return {
    severity: 'info',
    scope,
    summary: `Memory entry ${on ? 'enabled' : 'disabled'}: ${entryId}`,
    detail: null,
    payload: withExtra({ entry_id: entryId, on }, extra),
  };
}
