// Jobs: the running jobs, live, and the job history
// (the state database keeps CONSOLE_JOB_HISTORY of them, 10,000 by default) filtered by state,
// project and start time, one page at a time (GET /api/jobs with `X-Next-Cursor`: the page never
// holds more than PAGE_SIZE rows, however long the history). The lists are read again when a
// job starts or ends (its events on the page's stream), the history only while its newest page
// is shown; line counts of running jobs follow their line events. A form launches a job.
import { api, apiAnswer } from './api.js';
import { badge, fmtDuration, fmtTime, h, perFrame, replace, throttle } from './dom.js';

const STATES = ['running', 'exited failed', 'exited ok', 'lost'];
/** Jobs per page of the history. */
export const PAGE_SIZE = 100;
/** Running jobs listed (GET /api/jobs answers at most 500; the cap on running jobs is 64 by default). */
const RUNNING_LIMIT = 500;
/** `<proposal id> <stdout|stderr> line <n>`: the detail of a job's line event. */
const LINE_DETAIL = /^(gen_[0-9a-f]+) (stdout|stderr) line (\d+)/;
/** The windows offered, by how far back they reach (ms); `custom` shows two time inputs. */
const WINDOWS = [
  ['any', 'any time', null],
  ['1h', 'the last hour', 3600_000],
  ['24h', 'the last 24 hours', 86_400_000],
  ['7d', 'the last 7 days', 7 * 86_400_000],
  ['custom', 'from … to …', null],
];

/** How a job ended, in a word: its exitReason when the service gives one, else derived. */
export function outcomeOf(job) {
  if (job.exitReason) return job.exitReason;
  if (job.state === 'running') return job.cancelRequested ? 'cancelling' : 'running';
  if (job.state === 'lost') return 'lost';
  if (job.cancelRequested) return 'cancelled';
  return job.rc === 0 ? 'ok' : 'failed';
}

/** The event view of one job's events. */
export const eventsLink = (id) => `#/events?proposalId=${encodeURIComponent(id)}`;

export function jobsView(hub) {
  let disposed = false;
  let running = [];
  let page = [];
  /** Cursors of the pages shown so far: [null] is the newest page; Older pushes, Newer pops. */
  let cursors = [null];
  let next = null;
  /** Live line counts by job id: [stdout, stderr]. */
  const counts = new Map();
  const notice = h('p', { class: 'notice', hidden: true });
  const runningGroup = h('section', { class: 'job-group', dataset: { state: 'running' } });
  const filters = filterForm();
  const pager = h('div', { class: 'pager' });
  const history = h('div', { class: 'job-history-table' }, h('p', { class: 'muted' }, 'Loading…'));
  const element = h(
    'section',
    { class: 'jobs-view' },
    h('h1', {}, 'Jobs'),
    launchForm(),
    notice,
    runningGroup,
    h('section', { class: 'job-history', id: 'job-history' }, h('h2', {}, 'History'), filters.form, pager, history),
  );

  const refreshRunning = throttle(async () => {
    try {
      running = await api(`/api/jobs?state=running&limit=${RUNNING_LIMIT}`);
      if (!disposed) renderRunning();
    } catch (err) {
      if (!disposed) show(`Could not list the running jobs: ${err.message}`, true);
    }
  }, 300);

  /** Reads the page of `cursors`' last cursor with the filters; a stale answer is dropped. */
  let reading = 0;
  async function loadPage() {
    const mine = ++reading;
    if (filters.none()) {
      page = [];
      next = null;
      renderHistory();
      return;
    }
    const params = filters.params();
    params.set('limit', String(PAGE_SIZE));
    const cursor = cursors.at(-1);
    if (cursor) params.set('cursor', cursor);
    element.dataset.loading = 'true';
    try {
      const { body, headers } = await apiAnswer(`/api/jobs?${params}`);
      if (disposed || mine !== reading) return;
      page = body;
      next = headers.get('x-next-cursor');
      renderHistory();
    } catch (err) {
      if (!disposed && mine === reading) replace(history, h('p', { class: 'error' }, `Could not list the jobs: ${err.message}`));
    } finally {
      if (mine === reading) delete element.dataset.loading;
    }
  }
  /** The newest page follows the jobs' starts and ends; an older one stays as it was read. */
  const refreshNewest = throttle(() => {
    if (cursors.length === 1) loadPage();
  }, 1000);

  const renderCounts = perFrame(() => {
    for (const [id, [out, err]] of counts) {
      for (const cell of element.querySelectorAll(`tr[data-id="${id}"] .lines`)) cell.textContent = `${out} / ${err}`;
    }
  });

  function renderRunning() {
    replace(runningGroup, h('h2', {}, `Running (${running.length})`), running.length === 0 ? h('p', { class: 'muted' }, 'None.') : jobTable(running));
  }

  function renderHistory() {
    const first = (cursors.length - 1) * PAGE_SIZE + 1;
    element.dataset.page = String(cursors.length);
    replace(
      pager,
      h('button', { type: 'button', class: 'small', id: 'jobs-newer', disabled: cursors.length === 1, onclick: newer }, '← Newer'),
      h(
        'span',
        { class: 'muted', id: 'jobs-range' },
        page.length === 0 ? (cursors.length === 1 ? 'No job matches.' : 'No older job matches.') : `Page ${cursors.length}: jobs ${first}–${first + page.length - 1}, newest first`,
      ),
      h('button', { type: 'button', class: 'small', id: 'jobs-older', disabled: next === null, onclick: older }, 'Older →'),
    );
    replace(history, page.length === 0 ? h('p', { class: 'muted' }, 'None.') : jobTable(page, 'jobs-page'));
  }

  function older() {
    if (next === null) return;
    cursors.push(next);
    loadPage();
  }

  function newer() {
    if (cursors.length === 1) return;
    cursors.pop();
    loadPage();
  }

  function jobTable(list, id) {
    return h(
      'table',
      { class: 'jobs', id },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Job', 'Project', 'State', 'Outcome', 'Started', 'Duration', 'rc', 'Lines out / err', 'Events', ''].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        list.map((j) => {
          const c = counts.get(j.proposalId);
          return h(
            'tr',
            { dataset: { id: j.proposalId, state: j.state, project: j.projectId } },
            h('td', {}, h('a', { href: `#/jobs/${j.proposalId}`, class: 'mono' }, j.proposalId)),
            h('td', {}, j.projectId),
            h('td', {}, badge(j.state)),
            h('td', {}, outcomeOf(j)),
            h('td', { class: 'nowrap' }, fmtTime(j.startedAt)),
            h('td', { class: 'nowrap' }, fmtDuration(j.startedAt, j.endedAt)),
            h('td', {}, j.rc ?? '—'),
            h('td', { class: 'lines' }, c && j.state === 'running' ? `${c[0]} / ${c[1]}` : `${j.stdoutLines} / ${j.stderrLines}`),
            h('td', {}, h('a', { href: eventsLink(j.proposalId), class: 'events-link' }, 'events')),
            h('td', {}, j.state === 'running' ? h('button', { type: 'button', class: 'small', onclick: () => cancel(j.proposalId) }, 'Cancel') : ''),
          );
        }),
      ),
    );
  }

  async function cancel(id) {
    try {
      await api(`/api/jobs/${id}/cancel`, { method: 'POST' });
      show(`Cancel requested for ${id}.`);
    } catch (err) {
      show(`Cancel of ${id}: ${err.message}`, true);
    }
  }

  function show(text, error = false, link = null) {
    replace(notice, text, link ? [' ', link] : []);
    notice.classList.toggle('error', error);
    notice.hidden = false;
  }

  /** The history's filters: states, project, window; a change reads the newest page again. */
  function filterForm() {
    const changed = () => {
      cursors = [null];
      custom.hidden = windowSelect.value !== 'custom';
      form.dataset.filters = params().toString();
      loadPage();
    };
    const checks = STATES.map((s) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'state', value: s, checked: true, onchange: changed }), ' ', badge(s)));
    const project = h('select', { name: 'projectId', 'aria-label': 'Project', onchange: changed }, h('option', { value: '' }, 'every project'));
    const windowSelect = h(
      'select',
      { name: 'window', 'aria-label': 'Started', onchange: changed },
      WINDOWS.map(([v, label]) => h('option', { value: v }, label)),
    );
    const from = h('input', { type: 'datetime-local', name: 'from', 'aria-label': 'Started from', step: 1, onchange: changed });
    const to = h('input', { type: 'datetime-local', name: 'to', 'aria-label': 'Started before', step: 1, onchange: changed });
    const custom = h('span', { class: 'custom-window', hidden: true }, from, ' to ', to);
    api('/api/projects')
      .then((list) => project.append(...list.map((p) => h('option', { value: p.id }, p.id))))
      .catch(() => {});
    const form = h(
      'form',
      { class: 'filters', id: 'job-filters', onsubmit: (e) => e.preventDefault() },
      h('span', {}, 'State'),
      checks,
      h('span', {}, 'Project'),
      project,
      h('span', {}, 'Started'),
      windowSelect,
      custom,
    );

    /** Whether no state is checked: then no job matches, and nothing is asked. */
    const none = () => checks.every((c) => !c.querySelector('input').checked);

    /** The query of the filters. */
    function params() {
      const p = new URLSearchParams();
      const states = checks
        .map((c) => c.querySelector('input'))
        .filter((i) => i.checked)
        .map((i) => i.value);
      if (states.length < STATES.length) for (const s of states) p.append('state', s);
      if (project.value) p.set('projectId', project.value);
      const reach = WINDOWS.find(([v]) => v === windowSelect.value)?.[2];
      if (reach) p.set('from', new Date(Date.now() - reach).toISOString());
      if (windowSelect.value === 'custom') {
        // datetime-local is the browser's local time; the API takes UTC with a zone.
        if (from.value) p.set('from', new Date(from.value).toISOString());
        if (to.value) p.set('to', new Date(to.value).toISOString());
      }
      return p;
    }
    form.dataset.filters = '';
    return { form, params, none };
  }

  function launchForm() {
    const project = h('select', { name: 'project', required: true, 'aria-label': 'Project' });
    const shot = h('input', { name: 'shot', placeholder: 'shot id (optional)', 'aria-label': 'Shot id' });
    const dry = h('input', { type: 'checkbox', name: 'dryRun' });
    api('/api/projects')
      .then((list) =>
        replace(
          project,
          list.map((p) => h('option', { value: p.id }, p.title ? `${p.title} (${p.id})` : p.id)),
        ),
      )
      .catch((err) => show(`Could not list the projects: ${err.message}`, true));
    const submit = async (e) => {
      e.preventDefault();
      try {
        const body = { project: project.value, dryRun: dry.checked };
        if (shot.value.trim()) body.shotId = shot.value.trim();
        const started = await api('/api/proposals/generate', { method: 'POST', body });
        show(`Started ${started.proposalId} (pid ${started.pid}).`, false, h('a', { href: `#/jobs/${started.proposalId}` }, 'Open it'));
        refreshRunning();
        refreshNewest();
      } catch (err) {
        show(`Launch refused: ${err.message}`, true);
      }
    };
    return h('form', { class: 'launch', onsubmit: submit }, h('strong', {}, 'Launch a generation job'), project, shot, h('label', {}, dry, ' dry run'), h('button', { type: 'submit' }, 'Launch'));
  }

  const unsubscribe = hub.subscribe((events) => {
    let changed = false;
    for (const e of events) {
      if (e.scope !== 'engine/generation') continue;
      if (e.payload?.source === 'dispatch_cli') {
        const m = LINE_DETAIL.exec(e.detail ?? '');
        if (!m) continue;
        const c = counts.get(m[1]) ?? [0, 0];
        c[m[2] === 'stdout' ? 0 : 1] = Number(m[3]);
        counts.set(m[1], c);
        renderCounts();
      } else if (e.payload?.proposal_id) {
        changed = true; // spawned, exited, lost, leftovers
      }
    }
    if (changed) {
      refreshRunning();
      refreshNewest();
    }
  });

  refreshRunning();
  loadPage();
  return {
    element,
    dispose() {
      disposed = true;
      unsubscribe();
      refreshRunning.cancel();
      refreshNewest.cancel();
    },
  };
}
