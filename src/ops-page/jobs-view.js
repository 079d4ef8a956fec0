// Jobs by state, live (issue 14, item 1): the list comes from GET /api/jobs and is fetched
// again when a job starts or ends (its events on the page's stream); line counts of running
// jobs follow their line events. A form launches a generation job.
import { api } from './api.js';
import { badge, fmtDuration, fmtTime, h, perFrame, replace, throttle } from './dom.js';

const STATES = ['running', 'exited failed', 'exited ok', 'lost'];
/** Jobs listed (GET /api/jobs answers at most 500). */
const LIST_LIMIT = 200;
/** `<proposal id> <stdout|stderr> line <n>`: the detail of a job's line event. */
const LINE_DETAIL = /^(gen_[0-9a-f]+) (stdout|stderr) line (\d+)/;

/** How a job ended, in a word: its exitReason when the service gives one, else derived. */
export function outcomeOf(job) {
  if (job.exitReason) return job.exitReason;
  if (job.state === 'running') return job.cancelRequested ? 'cancelling' : 'running';
  if (job.state === 'lost') return 'lost';
  if (job.cancelRequested) return 'cancelled';
  return job.rc === 0 ? 'ok' : 'failed';
}

export function jobsView(hub) {
  let jobs = [];
  let disposed = false;
  /** Live line counts by job id: [stdout, stderr]. */
  const counts = new Map();
  const notice = h('p', { class: 'notice', hidden: true });
  const sections = h('div', { class: 'job-groups' });
  const summary = h('p', { class: 'summary' });
  const element = h('section', { class: 'jobs-view' }, h('h1', {}, 'Jobs'), launchForm(), notice, summary, sections);

  const refresh = throttle(async () => {
    try {
      jobs = await api(`/api/jobs?limit=${LIST_LIMIT}`);
      counts.clear();
      if (!disposed) render();
    } catch (err) {
      if (!disposed) show(`Could not list the jobs: ${err.message}`, true);
    }
  }, 300);
  const renderCounts = perFrame(() => {
    for (const [id, [out, err]] of counts) {
      const cell = sections.querySelector(`tr[data-id="${id}"] .lines`);
      if (cell) cell.textContent = `${out} / ${err}`;
    }
  });

  function render() {
    const by = new Map(STATES.map((s) => [s, []]));
    for (const j of jobs) (by.get(j.state) ?? by.set(j.state, []).get(j.state)).push(j);
    replace(summary, ...STATES.flatMap((s) => [badge(s), ` ${by.get(s).length}  `]));
    replace(
      sections,
      ...[...by].map(([state, list]) =>
        h(
          'section',
          { class: 'job-group', dataset: { state } },
          h('h2', {}, `${state} (${list.length})`),
          list.length === 0 ? h('p', { class: 'muted' }, 'None.') : jobTable(list),
        ),
      ),
    );
  }

  function jobTable(list) {
    return h(
      'table',
      { class: 'jobs' },
      h('thead', {}, h('tr', {}, ['Job', 'Project', 'State', 'Outcome', 'Started', 'Duration', 'rc', 'Lines out / err', ''].map((t) => h('th', {}, t)))),
      h(
        'tbody',
        {},
        list.map((j) =>
          h(
            'tr',
            { dataset: { id: j.proposalId } },
            h('td', {}, h('a', { href: `#/jobs/${j.proposalId}`, class: 'mono' }, j.proposalId)),
            h('td', {}, j.projectId),
            h('td', {}, badge(j.state)),
            h('td', {}, outcomeOf(j)),
            h('td', {}, fmtTime(j.startedAt)),
            h('td', {}, fmtDuration(j.startedAt, j.endedAt)),
            h('td', {}, j.rc ?? '—'),
            h('td', { class: 'lines' }, `${j.stdoutLines} / ${j.stderrLines}`),
            h('td', {}, j.state === 'running' ? h('button', { type: 'button', class: 'small', onclick: () => cancel(j.proposalId) }, 'Cancel') : ''),
          ),
        ),
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

  function launchForm() {
    const project = h('select', { name: 'project', required: true, 'aria-label': 'Project' });
    const shot = h('input', { name: 'shot', placeholder: 'shot id (optional)', 'aria-label': 'Shot id' });
    const dry = h('input', { type: 'checkbox', name: 'dryRun' });
    api('/api/projects')
      .then((list) => replace(project, list.map((p) => h('option', { value: p.id }, p.title ? `${p.title} (${p.id})` : p.id))))
      .catch((err) => show(`Could not list the projects: ${err.message}`, true));
    const submit = async (e) => {
      e.preventDefault();
      try {
        const body = { project: project.value, dryRun: dry.checked };
        if (shot.value.trim()) body.shotId = shot.value.trim();
        const started = await api('/api/proposals/generate', { method: 'POST', body });
        show(`Started ${started.proposalId} (pid ${started.pid}).`, false, h('a', { href: `#/jobs/${started.proposalId}` }, 'Open it'));
        refresh();
      } catch (err) {
        show(`Launch refused: ${err.message}`, true);
      }
    };
    return h(
      'form',
      { class: 'launch', onsubmit: submit },
      h('strong', {}, 'Launch a generation job'),
      project,
      shot,
      h('label', {}, dry, ' dry run'),
      h('button', { type: 'submit' }, 'Launch'),
    );
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
    if (changed) refresh();
  });

  refresh();
  return {
    element,
    dispose() {
      disposed = true;
      unsubscribe();
      refresh.cancel();
    },
  };
}
