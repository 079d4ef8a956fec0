// The event tail: the newest events passing the severity and scope filters
// (GET /api/events), then live ones from the page's stream, newest first; opened from a job
// (`#/events?proposalId=<id>`), only that job's events. Rendering is batched
// per animation frame and the table keeps at most MAX_ROWS rows, so thousands of events a second
// leave the page usable. Pause holds new events (the newest MAX_ROWS) until Resume.
import { api } from './api.js';
import { badge, fmtClock, h, perFrame, replace } from './dom.js';

const SEVERITIES = ['info', 'success', 'failure', 'warning', 'fallback'];
/** Rows kept in the table. */
export const MAX_ROWS = 500;
/** Events read when the filters change. */
const FIRST_PAGE = 200;

/** A job's line event names it at the start of its detail (`<proposal id> stdout line <n>`). */
const aboutProposal = (e, id) => e.payload?.proposal_id === id || (e.detail ?? '').startsWith(`${id} `);

/** @param query the hash's query: `proposalId` keeps one job's (or proposal's) events. */
export function eventsView(hub, query = new URLSearchParams()) {
  let disposed = false;
  let paused = false;
  let loading = null;
  /** Highest id shown or skipped: live events at or below it are already in the table. */
  let floor = 0;
  let queue = [];
  /** Live events that came while a read ran. */
  let pending = [];
  let held = [];
  let heldCount = 0;
  let seen = 0;
  const proposalId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(query.get('proposalId') ?? '') ? query.get('proposalId') : null;
  const filters = { severities: new Set(SEVERITIES), scopePrefix: '', proposalId };

  const checks = SEVERITIES.map((s) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'severity', value: s, checked: true, onchange: onFilter }), ' ', badge(s, 'severity')));
  const scope = h('input', { type: 'search', name: 'scopePrefix', placeholder: 'scope prefix, e.g. engine/generation', 'aria-label': 'Scope prefix', oninput: debounce(onFilter, 250) });
  const pause = h('button', { type: 'button', id: 'pause-events', onclick: togglePause }, 'Pause');
  const status = h('span', { class: 'muted', id: 'tail-status' });
  const body = h('tbody', { id: 'event-rows' });
  const element = h(
    'section',
    { class: 'events-view', dataset: { proposal: proposalId ?? '' } },
    h('h1', {}, 'Events', proposalId ? [' of ', h('a', { href: `#/jobs/${encodeURIComponent(proposalId)}`, class: 'mono', id: 'events-job' }, proposalId)] : ''),
    proposalId
      ? h(
          'p',
          { class: 'notice', id: 'events-scope' },
          `Only the events about ${proposalId}: its spawn, output lines, exit or loss, and decisions on it. `,
          h('a', { href: '#/events' }, 'Show every event'),
        )
      : '',
    h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() }, h('span', {}, 'Severity'), checks, scope, pause, status),
    h(
      'table',
      { class: 'events' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['id', 'Time', 'Severity', 'Scope', 'Summary', 'Detail'].map((t) => h('th', {}, t)),
        ),
      ),
      body,
    ),
  );

  const passes = (e) => filters.severities.has(e.severity) && e.scope.startsWith(filters.scopePrefix) && (filters.proposalId === null || aboutProposal(e, filters.proposalId));

  function row(e) {
    return h(
      'tr',
      { dataset: { id: e.id, severity: e.severity, scope: e.scope } },
      h('td', { class: 'mono' }, e.id),
      h('td', { class: 'mono' }, fmtClock(e.ts)),
      h('td', {}, badge(e.severity, 'severity')),
      h('td', { class: 'scope' }, e.scope),
      h('td', { class: 'summary' }, e.summary),
      h('td', { class: 'detail' }, e.detail ?? ''),
    );
  }

  /** Puts events (ascending ids) at the top of the table, keeping MAX_ROWS rows. */
  const flush = perFrame(() => {
    const batch = queue;
    queue = [];
    if (disposed || batch.length === 0) return;
    const fragment = document.createDocumentFragment();
    for (let i = batch.length - 1; i >= 0; i--) fragment.append(row(batch[i]));
    body.prepend(fragment);
    while (body.childElementCount > MAX_ROWS) body.lastElementChild.remove();
    showStatus();
  });

  function showStatus() {
    status.textContent = paused ? `paused: ${heldCount} new event${heldCount === 1 ? '' : 's'} held` : `${seen} live event${seen === 1 ? '' : 's'} since this view opened`;
  }

  function take(events) {
    for (const e of events) {
      if (Number(e.id) <= floor || !passes(e)) continue;
      floor = Number(e.id);
      seen++;
      if (paused) {
        held.push(e);
        heldCount++;
      } else queue.push(e);
    }
    // Only the newest MAX_ROWS can ever be shown: older ones are not kept.
    if (held.length > MAX_ROWS) held = held.slice(-MAX_ROWS);
    if (queue.length > MAX_ROWS) queue = queue.slice(-MAX_ROWS);
    if (paused) showStatus();
    else flush();
  }

  function togglePause() {
    paused = !paused;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.classList.toggle('active', paused);
    if (!paused) {
      queue.push(...held);
      held = [];
      heldCount = 0;
      flush();
    }
    showStatus();
  }

  /** Reads the newest events with the filters, replacing the table. */
  async function load() {
    const params = new URLSearchParams({ limit: String(FIRST_PAGE) });
    for (const s of filters.severities) params.append('severities', s);
    if (filters.scopePrefix) params.set('scopePrefix', filters.scopePrefix);
    if (filters.proposalId) params.set('proposalId', filters.proposalId);
    const mine = (loading = {});
    // While this read runs, live events wait: the read may or may not hold them.
    pending = [];
    try {
      const events = filters.severities.size === 0 ? [] : await api(`/api/events?${params}`);
      if (disposed || loading !== mine) return;
      replace(body);
      queue = [];
      held = [];
      heldCount = 0;
      floor = events.length > 0 ? Number(events[events.length - 1].id) : floor;
      queue.push(...events);
      flush();
    } catch (err) {
      if (!disposed) replace(body, h('tr', {}, h('td', { colspan: 6, class: 'error' }, `Could not read the events: ${err.message}`)));
    } finally {
      if (loading === mine) {
        loading = null;
        const waiting = pending;
        pending = [];
        take(waiting);
      }
    }
  }

  function onFilter() {
    filters.severities = new Set(
      checks
        .map((c) => c.querySelector('input'))
        .filter((i) => i.checked)
        .map((i) => i.value),
    );
    filters.scopePrefix = scope.value.trim();
    element.dataset.filters = `${[...filters.severities].join(',')}|${filters.scopePrefix}`;
    load();
  }

  const unsubscribe = hub.subscribe((events) => {
    if (loading) pending.push(...events);
    else take(events);
  });
  showStatus();
  load();
  return {
    element,
    dispose() {
      disposed = true;
      unsubscribe();
    },
  };
}

function debounce(fn, ms) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}
