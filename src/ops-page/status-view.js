// The service's status (issue 14, item 1): GET /api/system-status, read again every few
// seconds while shown: jobs, bus, workers, cache, database, guards, fallbacks, write proxy,
// Host check, terminals, every configured limit, and the instances once cluster mode exists.
import { api } from './api.js';
import { fmtDuration, fmtTime, h, replace } from './dom.js';

const REFRESH_MS = 5000;
/** Sections in this order; any other member of the answer follows under its own name. */
const SECTIONS = [
  ['jobs', 'Jobs'],
  ['bus', 'Event bus'],
  ['workers', 'Worker pool'],
  ['cache', 'Cache and store watcher'],
  ['database', 'State database'],
  ['guards', 'Start-up guards'],
  ['fallbacks', 'Fallbacks raised'],
  ['writeProxy', 'Write proxy'],
  ['hosts', 'Host check'],
  ['instances', 'Instances'],
  ['limits', 'Limits'],
];
const SKIPPED = new Set(['version', 'startedAt', 'uptimeSeconds', 'terminals']);

export function statusView() {
  let disposed = false;
  let timer = null;
  const updated = h('span', { class: 'muted' });
  const content = h('div', { class: 'status-grid', id: 'status' }, h('p', { class: 'muted' }, 'Loading…'));
  const element = h(
    'section',
    { class: 'status-view' },
    h('h1', {}, 'Service status ', h('button', { type: 'button', class: 'small', onclick: () => load() }, 'Refresh'), ' ', updated),
    content,
  );

  async function load() {
    clearTimeout(timer);
    try {
      const s = await api('/api/system-status');
      if (disposed) return;
      render(s);
      updated.textContent = `read at ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (!disposed) replace(content, h('p', { class: 'error' }, `Could not read the status: ${err.message}`));
    }
    if (!disposed) timer = setTimeout(load, REFRESH_MS);
  }

  function render(s) {
    const names = [...SECTIONS.filter(([k]) => k in s), ...Object.keys(s).filter((k) => !SKIPPED.has(k) && !SECTIONS.some(([n]) => n === k)).map((k) => [k, k])];
    replace(
      content,
      h('div', { class: 'card', dataset: { section: 'service' } }, h('h2', {}, 'Service'), facts({ version: s.version, started: fmtTime(s.startedAt), uptime: fmtDuration(s.startedAt) })),
      names.map(([key, title]) => h('div', { class: 'card', dataset: { section: key } }, h('h2', {}, title), value(key === 'jobs' ? withoutRecent(s.jobs) : s[key]))),
    );
  }

  load();
  return {
    element,
    dispose() {
      disposed = true;
      clearTimeout(timer);
    },
  };
}

/** The jobs section without its list of recent jobs (the jobs page shows them). */
function withoutRecent(jobs) {
  const { recent, ...rest } = jobs ?? {};
  return { ...rest, recent: Array.isArray(recent) ? `${recent.length} (see Jobs)` : recent };
}

/** A definition list of an object's members; nested objects become nested lists. */
function facts(obj) {
  return h('dl', { class: 'facts' }, Object.entries(obj).map(([k, v]) => [h('dt', {}, k), h('dd', {}, value(v))]));
}

function value(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length === 0 ? 'none' : h('ul', {}, v.map((x) => h('li', {}, value(x))));
  if (typeof v === 'object') return Object.keys(v).length === 0 ? 'none' : facts(v);
  return String(v);
}
