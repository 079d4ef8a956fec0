/**
 * `GET /api/memory` (spec: Read routes).
 */
import { z } from 'zod';
import type { Api } from '../route.js';
import { MemoryEntry, MissingCanonicalField } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { sendCached } from './send.js';

export function memoryRoutes(api: Api, { store }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/memory',
    operationId: 'listMemory',
    summary: 'List memory entries',
    description: 'Entries of the store’s `memory/` folder by id; `enabled` is the last recorded toggle, else the file’s value (default true).',
    tag: 'Engine',
    answers: {
      200: { description: 'Memory entries.', schema: z.array(MemoryEntry) },
      422: { description: 'An entry lacks a canonical field.', schema: MissingCanonicalField },
    },
    handler: async ({ req, res }) => sendCached(req, res, await store.listMemory()),
  });
}
