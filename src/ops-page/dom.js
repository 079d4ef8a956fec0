// Small DOM helpers of the ops page. Text always goes in as text nodes, never as HTML.

/**
 * Makes an element: `h('a', { href: '#/jobs', class: 'x', onclick: fn }, 'text', child)`.
 * Attributes whose value is null, undefined or false are left out; `on…` ones are listeners.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** Appends children (nodes, strings, numbers, nested arrays; null and false skipped). */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** Replaces every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A local date and time with seconds, or an em dash. */
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return `${d.toLocaleDateString()} ${d.toLocaleTimeString()}`;
}

/** The time of day with milliseconds (event rows). */
export function fmtClock(iso) {
  const d = new Date(iso);
  return `${d.toLocaleTimeString([], { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** A duration between two ISO times (the second defaults to now), e.g. `1 m 05 s`. */
export function fmtDuration(from, to) {
  if (!from) return '—';
  const ms = Math.max(0, (to ? Date.parse(to) : Date.now()) - Date.parse(from));
  if (ms < 1000) return `${ms} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} m`;
}

/** A badge whose colour follows its value (`data-value`). */
export function badge(value, kind = 'state') {
  return h('span', { class: `badge ${kind}`, dataset: { value } }, value);
}

/**
 * Calls `fn` at most once per animation frame, however often `schedule` is called: what
 * arrives in between is rendered together.
 */
export function perFrame(fn) {
  let pending = false;
  return function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}

/** Calls `fn` at most once per `ms` (the first call at once, the last one always). */
export function throttle(fn, ms) {
  let timer = null;
  let last = 0;
  const run = () => {
    if (timer !== null) return;
    const wait = Math.max(0, last + ms - Date.now());
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn();
    }, wait);
  };
  run.cancel = () => {
    clearTimeout(timer);
    timer = null;
  };
  return run;
}
