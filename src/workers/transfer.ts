/**
 * Moving results out of a worker without a copy: a result object whose byte arrays are
 * transferred with it (Piscina's Transferable protocol). A body of a store file may be many
 * megabytes (CONSOLE_STORE_FILE_MAX_BYTES is configurable): copying it, or encoding a string on
 * the main thread, would hold the event loop (issue 10, item 3).
 */
import { Piscina } from 'piscina';

/**
 * `value` with the buffers of `bodies` transferred to the receiving thread. Each body must own
 * its whole ArrayBuffer (TextEncoder's output does; a pooled Buffer does not), since the whole
 * buffer is detached here.
 */
export function moving<T extends object>(value: T, bodies: readonly Uint8Array[]): T {
  if (bodies.length === 0) return value;
  const buffers = bodies.map((b) => b.buffer as ArrayBuffer);
  const transferable = {
    get [Piscina.transferableSymbol]() {
      return buffers;
    },
    get [Piscina.valueSymbol]() {
      return value;
    },
  };
  // Piscina unwraps the value and posts it with the buffers in its transfer list.
  return Piscina.move(transferable as never) as T;
}
