// The ops page: one event stream for the whole page, shared by the views,
// a hash router (#/jobs, #/jobs/<id>, #/events[?proposalId=<id>], #/terminals, #/status) and the
// token dialog.
import { forgetToken, hasToken, openStream, setTokenPrompt } from './api.js';
import { h, replace } from './dom.js';
import { eventsView } from './events-view.js';
import { jobView } from './job-view.js';
import { jobsView } from './jobs-view.js';
import { statusView } from './status-view.js';
import { terminalsView } from './terminals-view.js';

/** Listeners of the page's stream: each gets every batch of events. */
const listeners = new Set();

/** The views' access to the page's stream: `subscribe(fn)` returns the function that ends it. */
const hub = {
  subscribe(fn) {
    listeners.add(fn);
    return () => listeners.delete(fn);
  },
};

const streamState = document.getElementById('stream-state');
const forget = document.getElementById('forget-token');

/** Asks for the token in the dialog; resolves with what was typed. */
function askToken(wrong) {
  const dialog = document.getElementById('token-dialog');
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const error = document.getElementById('token-error');
  error.hidden = !wrong;
  error.textContent = wrong ? 'That token was refused (401): try again.' : '';
  input.value = '';
  streamState.dataset.state = 'token';
  streamState.textContent = 'token needed';
  return new Promise((resolve) => {
    const submit = (e) => {
      e.preventDefault();
      const value = input.value.trim();
      if (value === '') return;
      form.removeEventListener('submit', submit);
      dialog.close();
      forget.hidden = false;
      resolve(value);
    };
    form.addEventListener('submit', submit);
    // Escape does not dismiss it: nothing works without the token.
    dialog.addEventListener('cancel', (e) => e.preventDefault(), { once: true });
    dialog.showModal();
    input.focus();
  });
}

setTokenPrompt(askToken);
forget.hidden = !hasToken();
forget.addEventListener('click', () => {
  forgetToken();
  location.reload();
});

openStream(
  {},
  {
    onEvents: (events) => {
      for (const fn of listeners) fn(events);
    },
    onState: (state) => {
      streamState.dataset.state = state;
      streamState.textContent = state;
    },
  },
);

const ROUTES = [
  [/^#\/jobs\/([^/]+)$/, (m) => jobView(decodeURIComponent(m[1]), hub), 'jobs'],
  [/^#\/jobs$/, () => jobsView(hub), 'jobs'],
  [/^#\/events(?:\?(.*))?$/, (m) => eventsView(hub, new URLSearchParams(m[1] ?? '')), 'events'],
  [/^#\/terminals$/, () => terminalsView(hub), 'terminals'],
  [/^#\/status$/, () => statusView(hub), 'status'],
];

const main = document.getElementById('view');
let current = null;

/** Mounts the view of the location's hash (the jobs by default); the previous one is disposed. */
function route() {
  const hash = location.hash || '#/jobs';
  const found = ROUTES.map(([re, make, nav]) => [re.exec(hash), make, nav]).find(([m]) => m);
  current?.dispose();
  current = null;
  if (!found) {
    replace(main, h('p', {}, 'No such page. ', h('a', { href: '#/jobs' }, 'Jobs')));
    return;
  }
  const [m, make, nav] = found;
  for (const a of document.querySelectorAll('#nav a[data-view]')) a.classList.toggle('active', a.dataset.view === nav);
  current = make(m);
  replace(main, current.element);
}

window.addEventListener('hashchange', route);
route();
