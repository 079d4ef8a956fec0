// One job's page: its argv, times, state, rc and line counts, its output
// lines as they arrive (GET /api/jobs/{id}/events, then the stream filtered by proposalId from
// the last event read), and a cancel button.
import { api, openStream } from './api.js';
import { badge, fmtDuration, fmtTime, h, perFrame, replace } from './dom.js';
import { eventsLink, outcomeOf } from './jobs-view.js';

/** Output lines kept on the page: the oldest go first past this. */
const MAX_LINES = 5000;
/** Events read when the page opens (the newest; the API's page size). */
const FIRST_PAGE = 500;

export function jobView(id, hub) {
  let disposed = false;
  let job = null;
  let stream = null;
  let dropped = 0;
  /** The highest line numbers seen, [stdout, stderr]: the header's counts follow them. */
  const seenLines = [0, 0];
  /** Events waiting for the next frame. */
  let queue = [];
  const header = h('div', { class: 'job-header' }, h('p', { class: 'muted' }, 'Loading…'));
  const cancelButton = h('button', { type: 'button', class: 'danger', id: 'cancel-job', disabled: true, onclick: cancel }, 'Cancel job');
  const message = h('p', { class: 'notice', hidden: true });
  const earlier = h('p', { class: 'muted', hidden: true });
  const lines = h('ol', { class: 'output', id: 'job-output' });
  const element = h(
    'section',
    { class: 'job-view' },
    h('p', {}, h('a', { href: '#/jobs' }, '← Jobs')),
    h('h1', {}, 'Job ', h('span', { class: 'mono' }, id)),
    header,
    h('div', { class: 'actions' }, cancelButton, h('a', { href: eventsLink(id), id: 'job-events-link', class: 'button-link' }, 'Its events in the event view')),
    message,
    h('h2', {}, 'Output'),
    earlier,
    lines,
  );

  const flush = perFrame(() => {
    const batch = queue;
    queue = [];
    if (disposed || batch.length === 0) return;
    const atBottom = lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 4;
    const fragment = document.createDocumentFragment();
    let ended = false;
    for (const e of batch.slice(-MAX_LINES)) {
      if (e.payload?.source === 'dispatch_cli') fragment.append(lineRow(e));
      else if (e.scope === 'engine/generation' && /^dispatch_cli (exited|lost)/.test(e.summary)) {
        fragment.append(h('li', { class: `meta ${e.severity}` }, e.summary, e.detail ? ` (${e.detail})` : ''));
        ended = true;
      } else if (e.scope === 'engine/generation') {
        fragment.append(h('li', { class: `meta ${e.severity}` }, e.summary));
      }
    }
    dropped += Math.max(0, batch.length - MAX_LINES);
    lines.append(fragment);
    while (lines.childElementCount > MAX_LINES) {
      lines.firstElementChild.remove();
      dropped++;
    }
    if (dropped > 0) {
      earlier.hidden = false;
      earlier.textContent = `${dropped} earlier lines are not shown here (GET /api/jobs/${id}/events has them while retention keeps them).`;
    }
    if (atBottom) lines.scrollTop = lines.scrollHeight;
    const counts = document.getElementById('job-lines');
    if (counts && job?.state === 'running') counts.textContent = `${Math.max(job.stdoutLines, seenLines[0])} / ${Math.max(job.stderrLines, seenLines[1])}`;
    if (ended) loadJob();
  });

  function lineRow(e) {
    const m = /^\S+ (stdout|stderr) line (\d+)/.exec(e.detail ?? '');
    if (m) {
      const k = m[1] === 'stdout' ? 0 : 1;
      seenLines[k] = Math.max(seenLines[k], Number(m[2]));
    }
    return h('li', { class: m?.[1] ?? 'stdout', dataset: { line: m?.[2] ?? '' } }, e.summary);
  }

  function receive(events) {
    queue.push(...events);
    if (queue.length > MAX_LINES) queue = queue.slice(-MAX_LINES);
    flush();
  }

  async function loadJob() {
    try {
      job = await api(`/api/jobs/${encodeURIComponent(id)}`);
      if (!disposed) renderHeader();
    } catch (err) {
      if (!disposed) replace(header, h('p', { class: 'error' }, err.status === 404 ? `No job ${id}.` : err.message));
    }
  }

  function renderHeader() {
    const rows = [
      ['State', [badge(job.state), ' ', h('span', { id: 'job-outcome', class: 'outcome', dataset: { value: outcomeOf(job) } }, outcomeOf(job))]],
      ['Project', job.projectId],
      ['pid', job.pid ?? '—'],
      ['argv', h('code', { class: 'argv' }, job.argv.map((a) => (/[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(' '))],
      ['Started', fmtTime(job.startedAt)],
      ['Ended', fmtTime(job.endedAt)],
      ['Duration', fmtDuration(job.startedAt, job.endedAt)],
      ['rc', job.rc ?? '—'],
      ['Signal', job.signal ?? '—'],
      ['Lines (stdout / stderr)', h('span', { id: 'job-lines' }, `${Math.max(job.stdoutLines, seenLines[0])} / ${Math.max(job.stderrLines, seenLines[1])}`)],
      ['Cancel requested', job.cancelRequested ? 'yes' : 'no'],
    ];
    if (job.exitReason) rows.push(['Exit reason', job.exitReason]);
    replace(
      header,
      h(
        'dl',
        { class: 'facts', id: 'job-facts', dataset: { state: job.state } },
        rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      ),
    );
    cancelButton.disabled = job.state !== 'running';
  }

  async function cancel() {
    cancelButton.disabled = true;
    try {
      job = await api(`/api/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      message.textContent = 'Cancel requested: SIGTERM sent to the job’s processes (SIGKILL after the grace period).';
      message.classList.remove('error');
      renderHeader();
      cancelButton.disabled = true;
    } catch (err) {
      message.textContent = `Cancel refused: ${err.message}`;
      message.classList.add('error');
      loadJob();
    }
    message.hidden = false;
  }

  async function start() {
    await loadJob();
    if (disposed || job === null) return;
    try {
      const first = await api(`/api/jobs/${encodeURIComponent(id)}/events?limit=${FIRST_PAGE}`);
      if (disposed) return;
      if (first.length === FIRST_PAGE) {
        earlier.hidden = false;
        earlier.textContent = `Only the newest ${FIRST_PAGE} events are shown from before this page opened.`;
      }
      receive(first);
      // From the last event read: the stream replays what came since, then goes on live.
      const sinceId = first.length > 0 ? first[first.length - 1].id : '0';
      stream = openStream({ proposalId: id, sinceId }, { onEvents: receive });
    } catch (err) {
      replace(lines, h('li', { class: 'error' }, `Could not read the job’s events: ${err.message}`));
    }
  }

  // The page's stream is not needed here: the job's own stream carries its events.
  void hub;
  start();
  return {
    element,
    dispose() {
      disposed = true;
      stream?.close();
    },
  };
}
