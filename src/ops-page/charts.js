// The last 15 minutes as charts (GET /api/system-status/history), drawn with uPlot, which the
// service serves from the `uplot` package (/ops/vendor/, no network; it draws on a canvas and
// styles through the DOM, which the page's Content-Security-Policy allows). One chart per panel
// of chart-panels.js, one line per figure and instance (labelled with its id in cluster mode).
// New samples are fetched with `since` and appended; what falls out of the window is dropped.
import { PANELS, SERIES_NAMES } from './chart-panels.js';
import { h, replace } from './dom.js';
import { byUnit } from './format.js';

const COLORS = ['#2f6fdb', '#c2410c', '#15803d', '#7c3aed', '#b91c1c', '#0e7490', '#a16207', '#be185d', '#4d7c0f', '#1d4ed8'];
const HEIGHT = 170;
/** Units of whole things, and the steps of their axes. */
const COUNTED = new Set(['jobs', 'clients', 'pauses']);
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** The instance key of a history: its id, or `local` on the embedded database. */
const keyOf = (inst) => inst.id ?? 'local';

/**
 * The histories of every instance seen, merged answer after answer: each keeps its samples
 * (times ascending) within the window. Behind a balancer each answer may come from another
 * instance; samples are kept by instance id, whoever relayed them.
 */
export class Histories {
  constructor() {
    this.byKey = new Map();
    this.unreachable = new Map();
    this.windowMs = 15 * 60 * 1000;
    this.intervalMs = 5000;
    this.figures = [];
  }

  /** Adds an answer of the history route. */
  merge(answer) {
    this.windowMs = answer.windowSeconds * 1000;
    this.intervalMs = answer.intervalSeconds * 1000;
    this.figures = answer.figures;
    const listed = new Set();
    for (const inst of answer.instances) {
      const key = keyOf(inst);
      listed.add(key);
      if (!inst.reachable) {
        this.unreachable.set(key, inst.error);
        continue;
      }
      this.unreachable.delete(key);
      const kept = this.byKey.get(key) ?? { id: inst.id, times: [], series: {} };
      const lastAt = kept.times.at(-1) ?? -Infinity;
      inst.times.forEach((t, i) => {
        if (t <= lastAt) return;
        kept.times.push(t);
        for (const f of answer.figures) (kept.series[f.name] ??= new Array(kept.times.length - 1).fill(null)).push(inst.series[f.name]?.[i] ?? null);
      });
      this.byKey.set(key, kept);
    }
    // An instance no longer listed (dead, gone) keeps its samples until they leave the window.
    const oldest = Math.max(...[...this.byKey.values()].map((k) => k.times.at(-1) ?? 0)) - this.windowMs;
    for (const [key, kept] of this.byKey) {
      const drop = kept.times.findIndex((t) => t >= oldest);
      const n = drop === -1 ? kept.times.length : drop;
      if (n > 0) {
        kept.times.splice(0, n);
        for (const s of Object.values(kept.series)) s.splice(0, n);
      }
      if (kept.times.length === 0 && !listed.has(key)) this.byKey.delete(key);
    }
  }

  /** The `since` of the next read: the oldest of the instances' newest samples (none is missed). */
  since() {
    const lasts = [...this.byKey.values()].map((k) => k.times.at(-1)).filter((t) => t !== undefined);
    return lasts.length === 0 ? undefined : Math.min(...lasts);
  }

  /** The history of one instance (null: the embedded database's one). */
  of(id) {
    return this.byKey.get(id ?? 'local') ?? null;
  }

  /** The instances with samples, by id. */
  instances() {
    return [...this.byKey.values()].sort((a, b) => String(a.id).localeCompare(String(b.id)));
  }
}

/** An axis tick: numbers alone for counts and rates (the caption has the unit), with the unit for sizes and times. */
function tick(value, unit) {
  const f = byUnit(value, unit);
  return unit === 'seconds' || unit === 'bytes' || unit === 'ratio' ? `${f.text} ${f.unit}` : f.text;
}

/** The caption's unit. */
function captionUnit(unit) {
  return unit === 'seconds' ? 'time' : unit === 'bytes' ? 'bytes' : unit === 'ratio' ? '%' : unit;
}

/**
 * The charts' section: call `update(histories)` after each merge.
 * @returns `{ element, update, dispose }`.
 */
export function chartsView() {
  let disposed = false;
  let uPlot = null;
  const loading = import('./vendor/uPlot.esm.js').then((m) => (uPlot = m.default));
  loading.catch((err) => replace(notes, h('li', { class: 'error' }, `The charts could not be loaded: ${err.message}`)));
  const grid = h('div', { class: 'chart-grid', id: 'charts' });
  const notes = h('ul', { class: 'chart-notes' });
  const element = h('section', { class: 'charts' }, h('h2', {}, 'The last 15 minutes'), notes, grid);
  /** Panel key → { figure, plot, seriesKey }. */
  const charts = new Map();
  let last = null;

  for (const panel of PANELS) {
    const figure = h(
      'figure',
      { class: 'chart', dataset: { panel: panel.key, samples: '0', last: '' } },
      h('figcaption', {}, panel.title, ' ', h('span', { class: 'unit' }, captionUnit(panel.unit))),
      h('div', { class: 'plot' }),
    );
    grid.append(figure);
    charts.set(panel.key, { figure, plot: null, seriesKey: '' });
  }

  const resize = new ResizeObserver(() => {
    for (const c of charts.values()) c.plot?.setSize({ width: widthOf(c.figure), height: HEIGHT });
  });
  resize.observe(grid);

  function widthOf(figure) {
    return Math.max(200, figure.querySelector('.plot').clientWidth);
  }

  /** uPlot's data and series of one panel: x the union of every instance's sample times. */
  function build(panel, histories) {
    const instances = histories.instances();
    const times = [...new Set(instances.flatMap((i) => i.times))].sort((a, b) => a - b);
    const data = [times.map((t) => t / 1000)];
    const series = [{}];
    const many = instances.length > 1 || (instances[0]?.id ?? null) !== null;
    let color = 0;
    for (const inst of instances) {
      const at = new Map(inst.times.map((t, i) => [t, i]));
      for (const f of panel.figures) {
        const values = inst.series[f] ?? [];
        data.push(times.map((t) => (at.has(t) ? (values[at.get(t)] ?? null) : null)));
        const name = panel.figures.length > 1 ? SERIES_NAMES[f] : null;
        const label = many ? [name, inst.id].filter(Boolean).join(' · ') : (name ?? SERIES_NAMES[f]);
        series.push({
          label,
          stroke: COLORS[color++ % COLORS.length],
          width: 1.5,
          spanGaps: true,
          points: { show: false },
          value: (_u, v) => {
            if (v === null || v === undefined) return '—';
            const x = byUnit(v, panel.unit);
            return `${x.text} ${x.unit}`;
          },
        });
      }
    }
    return { data, series, seriesKey: series.map((s) => s.label ?? '').join('|'), times };
  }

  function draw(histories) {
    if (disposed || uPlot === null) return;
    for (const panel of PANELS) {
      const c = charts.get(panel.key);
      const { data, series, seriesKey, times } = build(panel, histories);
      if (c.plot === null || c.seriesKey !== seriesKey) {
        c.plot?.destroy();
        const holder = c.figure.querySelector('.plot');
        replace(holder);
        c.plot = new uPlot(
          {
            width: widthOf(c.figure),
            height: HEIGHT,
            cursor: { drag: { x: false, y: false } },
            legend: { show: true },
            scales: {
              x: { time: true },
              // From zero, so a flat line near zero is not drawn as a storm; a share up to 100 %.
              y: { range: (_u, _min, max) => [0, panel.unit === 'ratio' ? 1 : max > 0 ? max * 1.1 : 1] },
            },
            axes: [
              { stroke: '#687087', grid: { stroke: '#eef0f4', width: 1 }, ticks: { stroke: '#dde1e8', width: 1 } },
              {
                stroke: '#687087',
                size: 72,
                grid: { stroke: '#eef0f4', width: 1 },
                ticks: { stroke: '#dde1e8', width: 1 },
                // Things counted (jobs, clients, pauses) in whole steps: no tick at half a job.
                ...(COUNTED.has(panel.unit) ? { incrs: WHOLE_STEPS } : {}),
                values: (_u, splits) => splits.map((v) => tick(v, panel.unit)),
              },
            ],
            series,
          },
          data,
          holder,
        );
        c.seriesKey = seriesKey;
      } else {
        c.plot.setData(data);
      }
      c.figure.dataset.samples = String(times.length);
      c.figure.dataset.last = times.length > 0 ? String(times.at(-1)) : '';
    }
  }

  return {
    element,
    /** Draws what `histories` holds now (once uPlot is loaded). */
    update(histories) {
      last = histories;
      replace(
        notes,
        [...histories.unreachable].map(([key, error]) => h('li', { class: 'error' }, `Instance ${key}: its history could not be read (${error}).`)),
      );
      loading.then(
        () => draw(last),
        () => {},
      );
    },
    dispose() {
      disposed = true;
      resize.disconnect();
      for (const c of charts.values()) c.plot?.destroy();
    },
  };
}
