/**
 * Helpers of the console-state tests: JSON requests with any method, and the events a
 * request produced (every event stored after a given id).
 */
import { expect } from 'vitest';
import { allEvents, type EngineEvent } from '../helpers/events.js';
import type { TestService } from '../helpers/service.js';

/** Sends `body` as JSON with `method`; returns the status and the parsed answer. */
export async function send(t: TestService, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(t.url + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** The newest event id now (a mark to read the events of the next requests). */
export const mark = (t: TestService): string => String(t.service.deps.bus.lastId);

/** Every stored event after `since`. */
export const eventsAfter = (t: TestService, since: string, query = ''): Promise<EngineEvent[]> => allEvents(t.url, query, since);

/** Creates a proposal through the API and returns its id. */
export async function createProposal(t: TestService, body: Record<string, unknown> = { title: 'A proposal' }): Promise<string> {
  const r = await send(t, 'POST', '/api/proposals', body);
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return r.json.proposalId as string;
}

/** The fallback counts of the system status. */
export async function fallbackCounts(t: TestService): Promise<Record<string, number>> {
  const r = await send(t, 'GET', '/api/system-status');
  expect(r.status).toBe(200);
  return r.json.fallbacks as Record<string, number>;
}

/** One validation issue of a 422 answer. */
export interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
}
