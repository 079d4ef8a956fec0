// How each group of the status view is doing, in a word and the reasons in words: `ok`,
// `degraded` (the service works, something is held back or was lost: backpressure on, slow
// clients dropped, replays from the database, a fallback raised, readiness failing, the event
// loop held, the pool saturated, folders not watched, the write upstream failing) or `down`
// (the state database unreachable, an instance dead). Judged from `GET /api/system-status`, `GET
// /api/ready` and the recent history (`GET /api/system-status/history`) of the instance that
// answered: counters since start-up say nothing about now, the last 15 minutes do.
import { count, duration, percent, seconds } from './format.js';

/** The event-loop delay (p99 of a sample) past which the service is degraded: the alert's threshold (deploy/prometheus). */
export const LOOP_DELAY_DEGRADED_S = 0.25;
/** Worker pool utilisation past which it is busy. */
export const POOL_BUSY = 0.9;
/** How far back a write upstream's failure still degrades the status, ms. */
const RECENT_MS = 15 * 60 * 1000;

const RANK = { ok: 0, degraded: 1, down: 2 };

/** The worse of two states. */
export function worse(a, b) {
  return RANK[b] > RANK[a] ? b : a;
}

const say = (c) => `${c.text} ${c.unit}`;

/**
 * What the history says of the last 15 minutes: sums of the per-interval counts, and the
 * newest sample's values. `own` is the answering instance's history (`instances[0]`).
 */
export function recentOf(own) {
  const sum = (name) => (own?.series?.[name] ?? []).reduce((a, v) => a + (v ?? 0), 0);
  const last = (name) => {
    const s = own?.series?.[name] ?? [];
    for (let i = s.length - 1; i >= 0; i--) if (s[i] !== null && s[i] !== undefined) return s[i];
    return null;
  };
  return {
    samples: own?.times?.length ?? 0,
    slowClientsDropped: sum('slowClientsDropped'),
    outputPauses: sum('outputPauses'),
    replayPagesFromDatabase: sum('replayPagesFromDatabase'),
    fallbacksRaised: sum('fallbacksRaised'),
    last,
  };
}

/**
 * Judges every group.
 * @param s the system status; `ready` GET /api/ready's report (its 503 body too), or null when
 *   it could not be read; `recent` from {@link recentOf}.
 * @returns group key → `{ state, reasons }`.
 */
export function judge(s, ready, recent, now = Date.now()) {
  const out = {};
  const set = (key, state, reason) => {
    const g = (out[key] ??= { state: 'ok', reasons: [] });
    g.state = worse(g.state, state);
    if (reason) g.reasons.push(reason);
  };
  for (const key of ['service', 'readiness', 'jobs', 'bus', 'workers', 'cache', 'database', 'instances', 'guards', 'fallbacks', 'writeProxy', 'hosts', 'limits']) set(key, 'ok');

  // The process.
  const loop = recent.last('eventLoopDelayP99');
  if (loop !== null && loop > LOOP_DELAY_DEGRADED_S)
    set('service', 'degraded', `the event loop was held: p99 delay ${say(seconds(loop))} in the last sample (more than ${say(seconds(LOOP_DELAY_DEGRADED_S))})`);

  // Readiness.
  if (ready === null) set('readiness', 'degraded', 'GET /api/ready could not be read');
  else if (!ready.ready) {
    const failing = (ready.checks ?? []).filter((c) => !c.ok);
    set('readiness', 'degraded', `not ready: ${failing.map((c) => `${c.name} (${c.detail})`).join('; ') || ready.detail || 'a check fails'}`);
  }

  // Jobs.
  const jobs = s.jobs ?? {};
  const bp = jobs.backpressure;
  if (bp?.paused) set('jobs', 'degraded', `backpressure on: the jobs’ output is not read while the bus holds ${say(count(bp.backlogMax, 'events'))} not yet stored`);
  if (recent.outputPauses > 0) set('jobs', 'degraded', `job output held by backpressure ${say(count(recent.outputPauses, 'times'))} in the last 15 min`);
  if (jobs.maxRunning > 0 && jobs.running >= jobs.maxRunning) set('jobs', 'degraded', `at the cap of ${say(count(jobs.maxRunning, 'running jobs'))}: new jobs answer 503`);

  // The event bus and its streams.
  if (recent.slowClientsDropped > 0)
    set('bus', 'degraded', `${say(count(recent.slowClientsDropped, 'slow stream clients', 'slow stream client'))} dropped in the last 15 min (unsent bytes past CONSOLE_SSE_MAX_QUEUE_BYTES)`);
  if (recent.replayPagesFromDatabase > 0)
    set('bus', 'degraded', `replays from the database: ${say(count(recent.replayPagesFromDatabase, 'pages'))} in the last 15 min (streams resumed from further back than the replay memory)`);

  // The worker pool.
  const util = recent.last('poolUtilization');
  if (util !== null && util >= POOL_BUSY) set('workers', 'degraded', `busy: ${say(percent(util))} of the threads’ time in the last sample, ${say(count(s.workers?.queueSize ?? 0, 'tasks'))} queued`);

  // The cache's watcher.
  const failures = s.cache?.watchFailures ?? 0;
  if (failures > 0) set('cache', 'degraded', `${say(count(failures, 'store folders', 'store folder'))} could not be watched: edits there are not seen until a restart`);

  // The state database.
  const db = s.database ?? {};
  if (db.reachable === false) set('database', 'down', `unreachable: ${db.error ?? 'no answer'}${db.heldEvents ? `; ${say(count(db.heldEvents, 'events'))} held in memory until it answers` : ''}`);
  if (db.backend === 'postgres' && db.reachable !== false && db.listening === false)
    set('database', 'degraded', 'not listening for the other instances’ notifications: their events arrive by the one-second poll');
  if ((db.checkpointFailures ?? 0) > 0) set('database', 'degraded', `${say(count(db.checkpointFailures, 'WAL checkpoints', 'WAL checkpoint'))} failed`);

  // The instances of a cluster.
  for (const i of s.instances ?? []) {
    if (!i.alive) set('instances', 'down', `instance ${i.id} stopped beating ${say(duration(Math.max(0, now - Date.parse(i.heartbeatAt))))} ago: its running jobs were marked lost`);
  }

  // Fallbacks.
  if (recent.fallbacksRaised > 0) set('fallbacks', 'degraded', `a sanctioned fallback was raised ${say(count(recent.fallbacksRaised, 'times'))} in the last 15 min`);

  // The write proxy.
  const last = s.writeProxy?.lastFailure;
  if (last && now - Date.parse(last.at) < RECENT_MS) set('writeProxy', 'degraded', `the write upstream failed ${say(duration(Math.max(0, now - Date.parse(last.at))))} ago: ${last.detail}`);
  return out;
}
