// Terminals: each project's web terminal (GET /api/ttyd/status), started and
// stopped from here; the list is read again when a terminal event comes on the page's stream.
import { api } from './api.js';
import { badge, fmtTime, h, replace, throttle } from './dom.js';

export function terminalsView(hub) {
  let disposed = false;
  const notice = h('p', { class: 'notice', hidden: true });
  const table = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const project = h('select', { name: 'project', 'aria-label': 'Project' });
  const element = h(
    'section',
    { class: 'terminals-view' },
    h('h1', {}, 'Terminals'),
    h('form', { class: 'launch', onsubmit: start }, h('strong', {}, 'Start a terminal'), project, h('button', { type: 'submit' }, 'Start')),
    notice,
    table,
  );

  function show(text, error = false) {
    notice.textContent = text;
    notice.classList.toggle('error', error);
    notice.hidden = false;
  }

  const refresh = throttle(async () => {
    try {
      const { terminals } = await api('/api/ttyd/status');
      if (!disposed) render(terminals);
    } catch (err) {
      if (!disposed) show(`Could not read the terminals: ${err.message}`, true);
    }
  }, 300);

  function render(terminals) {
    if (terminals.length === 0) {
      replace(table, h('p', { class: 'muted' }, 'No terminal has been started since the service started.'));
      return;
    }
    replace(
      table,
      h(
        'table',
        { class: 'terminals' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Project', 'State', 'pid', 'Port', 'URL', 'Started', 'Ended', 'rc', ''].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          terminals.map((t) =>
            h(
              'tr',
              { dataset: { project: t.projectId } },
              h('td', {}, t.projectId),
              h('td', {}, badge(t.state)),
              h('td', {}, t.pid ?? '—'),
              h('td', {}, t.port ?? '—'),
              h('td', {}, t.state === 'running' ? h('a', { href: withCredential(t.url, t.credential), target: '_blank', rel: 'noopener noreferrer' }, t.url) : t.url),
              h('td', {}, fmtTime(t.startedAt)),
              h('td', {}, fmtTime(t.endedAt)),
              h('td', {}, t.rc ?? '—'),
              h('td', {}, t.state === 'running' ? h('button', { type: 'button', class: 'small', onclick: () => stop(t.projectId) }, 'Stop') : ''),
            ),
          ),
        ),
      ),
    );
  }

  async function start(e) {
    e.preventDefault();
    try {
      const t = await api('/api/ttyd/start', { method: 'POST', body: { projectId: project.value } });
      show(`Terminal of ${t.projectId} running on port ${t.port}.`);
    } catch (err) {
      show(`Start refused: ${err.message}`, true);
    }
    refresh();
  }

  async function stop(projectId) {
    try {
      await api('/api/ttyd/stop', { method: 'POST', body: { projectId } });
      show(`Terminal of ${projectId} stopped.`);
    } catch (err) {
      show(`Stop refused: ${err.message}`, true);
    }
    refresh();
  }

  api('/api/projects')
    .then((list) =>
      replace(
        project,
        list.map((p) => h('option', { value: p.id }, p.id)),
      ),
    )
    .catch(() => {});
  const unsubscribe = hub.subscribe((events) => {
    if (events.some((e) => e.scope === 'terminal' || e.scope.startsWith('terminal/'))) refresh();
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

/**
 * The terminal's address with its credential (`user:password`, handed out by the API behind the
 * token) as the URL's userinfo: the browser then opens it without asking.
 */
function withCredential(url, credential) {
  if (!credential) return url;
  const at = credential.indexOf(':');
  const u = new URL(url);
  u.username = credential.slice(0, at);
  u.password = credential.slice(at + 1);
  return u.toString();
}
