// The service's status at a glance: GET /api/system-status, GET /api/ready and the recent
// history, read again every few seconds while shown. Each group is headed by its state (ok,
// degraded, down) and the reasons in words (health.js); every figure is in human units
// (format.js); the raw JSON is one click away; below, the last 15 minutes as charts (charts.js),
// which move with each new sample.
import { api, ApiError } from './api.js';
import { chartsView, Histories } from './charts.js';
import { fmtTime, h, replace } from './dom.js';
import { ago, bytes, count, duration, grouped, percent, rate, seconds } from './format.js';
import { judge, recentOf, worse } from './health.js';

/** How often the status and readiness are read. */
const STATUS_MS = 5000;
/** The history is read every sample, but not more often than this. */
const MIN_HISTORY_MS = 1000;

/** The groups, in this order: key, title. */
const GROUPS = [
  ['service', 'Service'],
  ['readiness', 'Readiness'],
  ['jobs', 'Jobs'],
  ['bus', 'Event bus and streams'],
  ['workers', 'Worker pool'],
  ['cache', 'Cache and store watcher'],
  ['database', 'State database'],
  ['instances', 'Instances'],
  ['fallbacks', 'Fallbacks raised'],
  ['writeProxy', 'Write proxy'],
  ['guards', 'Start-up guards'],
  ['hosts', 'Host check'],
  ['limits', 'Limits'],
];

/** A figure: its label, and its value in a unit (`{ text, unit }`). */
const fig = (label, v) => ({ label, value: v });
/** A fact in words (a name, a path, yes or no); `wide` ones take the group's whole width. */
const fact = (label, text, wide = false) => ({ label, text: text === null || text === undefined || text === '' ? '—' : String(text), wide });
/** An identifier (a version, an event id): a fact, never a figure. */
const ident = (label, text) => ({ ...fact(label, text), id: true });

export function statusView() {
  let disposed = false;
  let statusTimer = null;
  let historyTimer = null;
  let status = null;
  let ready = null;
  const histories = new Histories();
  const charts = chartsView();
  const updated = h('span', { class: 'muted', id: 'status-read-at' });
  const overall = h('div', { class: 'overall', id: 'status-overall', dataset: { state: 'loading' } }, 'Loading…');
  const content = h('div', { class: 'status-grid', id: 'status' });
  const raw = h('pre', { class: 'raw-json', id: 'status-json' });
  const element = h(
    'section',
    { class: 'status-view' },
    h('h1', {}, 'Service status ', h('button', { type: 'button', class: 'small', onclick: () => loadStatus() }, 'Refresh'), ' ', updated),
    overall,
    content,
    charts.element,
    h('details', { class: 'raw', id: 'status-raw' }, h('summary', {}, 'Raw JSON (GET /api/system-status)'), raw),
  );

  async function loadStatus() {
    clearTimeout(statusTimer);
    try {
      const [s, r] = await Promise.all([api('/api/system-status'), readiness()]);
      if (disposed) return;
      status = s;
      ready = r;
      render();
      updated.textContent = `read at ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (!disposed) {
        overall.dataset.state = 'down';
        replace(overall, h('strong', {}, 'Unknown'), ` — could not read the status: ${err.message}`);
      }
    }
    if (!disposed) statusTimer = setTimeout(loadStatus, STATUS_MS);
  }

  /** GET /api/ready's report, its 503 included; null when it cannot be read. */
  async function readiness() {
    try {
      return await api('/api/ready');
    } catch (err) {
      if (err instanceof ApiError && err.body && typeof err.body === 'object' && Array.isArray(err.body.checks)) return err.body;
      return null;
    }
  }

  async function loadHistory() {
    clearTimeout(historyTimer);
    try {
      const since = histories.since();
      const answer = await api(`/api/system-status/history${since === undefined ? '' : `?since=${since}`}`);
      if (disposed) return;
      histories.merge(answer);
      charts.update(histories);
      if (status !== null) render();
    } catch {
      // The next read tries again; the status says what is wrong with the service.
    }
    if (!disposed) historyTimer = setTimeout(loadHistory, Math.max(MIN_HISTORY_MS, histories.intervalMs));
  }

  function render() {
    const s = status;
    const recent = recentOf(histories.of(s.instance ?? null));
    const states = judge(s, ready, recent);
    const shown = GROUPS.filter(([key]) => key !== 'instances' || (s.instances ?? []).length > 0);
    let worst = 'ok';
    const problems = [];
    for (const [key, title] of shown) {
      worst = worse(worst, states[key].state);
      for (const r of states[key].reasons) problems.push(`${title}: ${r}`);
    }
    overall.dataset.state = worst;
    replace(
      overall,
      h('strong', {}, worst === 'ok' ? 'All ok' : worst === 'down' ? 'Down' : 'Degraded'),
      s.instance ? ` — instance ${s.instance}` : '',
      problems.length > 0
        ? h(
            'ul',
            {},
            problems.map((p) => h('li', {}, p)),
          )
        : '',
    );
    replace(
      content,
      shown.map(([key, title]) => group(key, title, states[key], figuresOf(key, s, recent, ready))),
    );
    raw.textContent = JSON.stringify(s, null, 2);
  }

  loadStatus();
  loadHistory();
  return {
    element,
    dispose() {
      disposed = true;
      clearTimeout(statusTimer);
      clearTimeout(historyTimer);
      charts.dispose();
    },
  };
}

/** One group: its title and state, the reasons, then its figures and facts. */
function group(key, title, judged, items) {
  return h(
    'section',
    { class: 'card group', dataset: { section: key, state: judged.state } },
    h('header', {}, h('h2', {}, title), h('span', { class: 'health', dataset: { state: judged.state } }, judged.state)),
    judged.reasons.length > 0
      ? h(
          'ul',
          { class: 'reasons' },
          judged.reasons.map((r) => h('li', {}, r)),
        )
      : null,
    h(
      'dl',
      { class: 'figures' },
      items.map((it) =>
        it.value
          ? h(
              'div',
              { class: 'row' },
              h('dt', {}, it.label),
              h('dd', {}, h('span', { class: 'figure', dataset: { unit: it.value.unit } }, it.value.text, ' ', h('span', { class: 'unit' }, it.value.unit))),
            )
          : h('div', { class: it.wide ? 'row wide' : 'row' }, h('dt', {}, it.label), h('dd', { class: 'text', dataset: it.id ? { kind: 'id' } : {} }, it.text)),
      ),
    ),
  );
}

/** The figures and facts of a group, in human units. */
function figuresOf(key, s, recent, ready) {
  const last = (name) => recent.last(name);
  switch (key) {
    case 'service': {
      const loop = last('eventLoopDelayP99');
      const rss = last('rssBytes');
      const heap = last('heapUsedBytes');
      return [
        ident('Version', s.version),
        ...(s.instance ? [fact('Instance', s.instance)] : []),
        fact('Started', fmtTime(s.startedAt)),
        fig('Uptime', duration(s.uptimeSeconds * 1000)),
        ...(loop !== null ? [fig('Event-loop delay p99', seconds(loop))] : []),
        ...(rss !== null ? [fig('Resident memory', bytes(rss))] : []),
        ...(heap !== null ? [fig('Heap used', bytes(heap))] : []),
      ];
    }
    case 'readiness':
      return ready === null ? [fact('GET /api/ready', 'could not be read')] : (ready.checks ?? []).map((c) => fact(c.name, `${c.ok ? 'ok' : 'failing'}: ${c.detail}`, true));
    case 'jobs': {
      const j = s.jobs ?? {};
      const lines = last('linesPerSecond');
      return [
        fig('Running', count(j.running ?? 0, 'jobs')),
        fig('Cap (CONSOLE_MAX_RUNNING_JOBS)', count(j.maxRunning ?? 0, 'jobs')),
        fig('Started since start-up', count(j.startedSinceStart ?? 0, 'jobs')),
        ...Object.entries(j.byState ?? {}).map(([state, n]) => fig(`Recorded ${state}`, count(n, 'jobs'))),
        ...(lines !== null ? [fig('Output lines', rate(lines, 'lines'))] : []),
        fact('Backpressure', j.backpressure?.paused ? 'on: output not read' : 'off'),
        fig('Output pauses since start-up', count(j.backpressure?.pauses ?? 0, 'pauses')),
        fig('Output held since start-up', duration(j.backpressure?.pausedMs ?? 0)),
        fig('Jobs’ CPU priority (CONSOLE_JOB_NICE)', { text: String(j.priority?.nice ?? '—'), unit: 'nice' }),
        fig('Priority lowered', count(j.priority?.lowered ?? 0, 'jobs')),
        fig('Priority refused', count(j.priority?.refused ?? 0, 'jobs')),
        fig('Job I/O thread’s CPU priority (CONSOLE_JOB_THREAD_NICE)', { text: String(j.thread?.nice ?? '—'), unit: 'nice' }),
        fig('Lines read by the job I/O thread', count(j.thread?.lines ?? 0, 'lines')),
        fig('Lines waiting to be published', count(j.thread?.queued ?? 0, 'lines')),
      ];
    }
    case 'bus': {
      const b = s.bus ?? {};
      const r = b.replay ?? {};
      const stored = last('eventsStoredPerSecond');
      const delivered = last('eventsDeliveredPerSecond');
      return [
        fig('Stream clients', count(b.subscribers ?? 0, 'clients')),
        ...(stored !== null ? [fig('Events stored', rate(stored, 'events'))] : []),
        ...(delivered !== null ? [fig('Events delivered', rate(delivered, 'events'))] : []),
        ident('Last event id', b.lastEventId),
        fig('Events kept', count(b.stored ?? 0, 'events')),
        fig('Retention (CONSOLE_EVENT_RETENTION)', count(b.retention ?? 0, 'events')),
        fig('Published since start-up', count(b.publishedSinceStart ?? 0, 'events')),
        fig('Slow clients dropped since start-up', count(b.slowClientsDropped ?? 0, 'clients')),
        fig('Replay memory', bytes(r.bytes ?? 0)),
        fig('Replay memory bound', bytes(r.maxBytes ?? 0)),
        fig('Events in the replay memory', count(r.events ?? 0, 'events')),
        fig('Replay pages from memory', count(r.pagesFromMemory ?? 0, 'pages')),
        fig('Replay pages from the database', count(r.pagesFromDatabase ?? 0, 'pages')),
      ];
    }
    case 'workers': {
      const w = s.workers ?? {};
      const util = last('poolUtilization');
      return [
        fig('Threads', count(w.threads ?? 0, 'threads')),
        ...(util !== null ? [fig('Utilisation (last sample)', percent(util))] : []),
        fig('Utilisation since start-up', percent(w.utilization ?? 0)),
        fig('Queued', count(w.queueSize ?? 0, 'tasks')),
        fig('Completed', count(w.completed ?? 0, 'tasks')),
        fig('Timed out (CONSOLE_STORE_READ_TIMEOUT_MS)', count(w.timedOut ?? 0, 'tasks')),
      ];
    }
    case 'cache': {
      const c = s.cache ?? {};
      return [
        fig('Cached answers', count(c.entries ?? 0, 'answers')),
        fig('Cache size', bytes(c.bytes ?? 0)),
        fig('Cache bound', bytes(c.maxBytes ?? 0)),
        fig('Hits', count(c.hits ?? 0, 'hits')),
        fig('Misses', count(c.misses ?? 0, 'misses')),
        fig('Folders watched', count(c.watchedDirectories ?? 0, 'folders')),
        fig('Folders not watched', count(c.watchFailures ?? 0, 'folders')),
        fig('Watches replaced', count(c.watchesReplaced ?? 0, 'watches')),
        fig('Store files read', count(c.filesRead ?? 0, 'files')),
        fig('Projects read whole', count(c.projectReads ?? 0, 'reads')),
        fig('Projects patched', count(c.projectPatches ?? 0, 'patches')),
        fig('File changes kept', count(c.changeLogFiles ?? 0, 'files')),
      ];
    }
    case 'database': {
      const d = s.database ?? {};
      return [
        fact('Back end', d.backend === 'postgres' ? 'PostgreSQL (cluster mode)' : 'SQLite'),
        fact(d.backend === 'postgres' ? 'URL' : 'File', d.url ?? d.file, true),
        ...(d.binding ? [fact('Binding', d.binding)] : []),
        fact('Reachable', d.reachable ? 'yes' : 'no'),
        ...(d.backend === 'postgres' ? [fact('Listening', d.listening ? 'yes' : 'no')] : []),
        ...(d.checkpointFailures !== undefined ? [fig('Failed WAL checkpoints', count(d.checkpointFailures, 'checkpoints'))] : []),
        ...(d.heldEvents !== undefined ? [fig('Events held in memory', count(d.heldEvents, 'events'))] : []),
        ...(d.error ? [fact('Error', d.error, true)] : []),
      ];
    }
    case 'instances':
      return (s.instances ?? []).flatMap((i) => [
        fact(`${i.id}`, `${i.alive ? 'alive' : 'stopped beating'} · heartbeat ${ago(i.heartbeatAt)} · ${i.address} · ${i.version}`, true),
        fig(`${i.id}: running`, count(i.runningJobs, 'jobs')),
        fig(`${i.id}: stream clients`, count(i.streamClients, 'clients')),
      ]);
    case 'fallbacks':
      return [...Object.entries(s.fallbacks ?? {}).map(([name, n]) => fig(name, count(n, 'raises'))), fig('Raised in the last 15 min', count(recent.fallbacksRaised, 'raises'))];
    case 'writeProxy': {
      const p = s.writeProxy ?? {};
      return [
        fact('Enabled', p.enabled ? 'yes' : 'no (mutations run here)'),
        ...(p.enabled ? [fact('Upstream (SERVICE_WRITE_UPSTREAM)', p.upstream, true)] : []),
        fig('Forwarded', count(p.forwarded ?? 0, 'requests')),
        fig('Answered', count(p.answered ?? 0, 'requests')),
        fig('Failed', count(p.failures ?? 0, 'requests')),
        ...(p.lastFailure ? [fact('Last failure', `${ago(p.lastFailure.at)}: ${p.lastFailure.detail}`, true)] : []),
      ];
    }
    case 'guards': {
      const g = s.guards ?? {};
      return [
        fact('Checked on', g.checkedOn),
        ...(g.fallbacks ?? []).map((f) => fact(`Fallback ${f.name}`, f.retireBy ? `retires by ${f.retireBy}` : 'never retires')),
        ...(g.proposalKinds ?? []).map((k) => fact(`Kind ${k.name}`, `${k.label}${k.hasExecutor ? ', has an executor' : ', no executor'}`)),
      ];
    }
    case 'hosts': {
      const x = s.hosts ?? {};
      return [fact('Enforced', x.enforced ? 'yes' : 'no'), fact('Allowed besides loopback (CONSOLE_ALLOWED_HOSTS)', (x.allowed ?? []).join(', ') || 'none', true)];
    }
    case 'limits':
      return Object.entries(s.limits ?? {}).map(([name, v]) => fig(name, limitValue(name, v)));
    default:
      return [];
  }
}

/** A configured bound in its unit, read from the variable's name. */
function limitValue(name, v) {
  if (name.endsWith('_BYTES')) return bytes(v);
  if (name.endsWith('_MS')) return duration(v);
  if (name.endsWith('_SECONDS')) return duration(v * 1000);
  if (name === 'CONSOLE_JOB_NICE') return { text: String(v), unit: 'nice' };
  const nouns = {
    CONSOLE_MAX_RUNNING_JOBS: 'jobs',
    CONSOLE_JOB_HISTORY: 'jobs',
    CONSOLE_SWEEP_MAX_PASSES: 'passes',
    CONSOLE_EVENT_RETENTION: 'events',
    CONSOLE_EVENT_BACKLOG_MAX: 'events',
    CONSOLE_CLICKS_PER_PROJECT: 'clicks',
    CONSOLE_CLICKS_MAX_TOTAL: 'clicks',
    CONSOLE_STORE_JSON_MAX_DEPTH: 'levels',
  };
  // A bound named otherwise counts what its name ends with (CONSOLE_…_ITEMS: items).
  const noun = nouns[name] ?? name.split('_').at(-1).toLowerCase();
  return { text: grouped(v), unit: noun };
}
