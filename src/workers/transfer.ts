/** Moving worker results without a copy: a large store-file body copied or decoded on the main thread would hold the event loop. */
import { Piscina } from 'piscina';

/** `value` with `bodies`' buffers transferred; each body must own its whole ArrayBuffer (a pooled Buffer does not). */
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
  return Piscina.move(transferable as never) as T;
}
