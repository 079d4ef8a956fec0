/** The dispatch tool as a library, store root and output injected (engine-format.md §The dispatch tool). */
export { runDispatch, type DispatchIo, type DispatchOptions } from './run-dispatch.js';
export { DEFAULT_MODEL, parseDispatchArgs, type DispatchArgs } from './parse-args.js';
export { isValidId, ID_PATTERN } from './validate-id.js';
export { resolveStoreRoot } from './resolve-store-root.js';
export type { Outcome, Receipt } from './append-receipt.js';
