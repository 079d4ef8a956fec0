/**
 * The dispatch tool as a library: the same run as `cli.ts`, with the store root and the
 * output lines injected (engine-format.md, "The dispatch tool").
 */
export { runDispatch, type DispatchIo, type DispatchOptions } from './run-dispatch.js';
export { DEFAULT_MODEL, parseDispatchArgs, type DispatchArgs } from './parse-args.js';
export { isValidId, ID_PATTERN } from './validate-id.js';
export { resolveStoreRoot } from './resolve-store-root.js';
export type { Outcome, Receipt } from './append-receipt.js';
