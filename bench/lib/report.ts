/**
 * Figures, ratios and the results table. Every row compares a figure with a baseline
 * measured in the same run on the same machine; each is measured 3 times and reported as
 * min/median/max, and the verdict uses the median ratio.
 */
import fs from 'node:fs';
import os from 'node:os';
import { RESULTS_FILE } from './paths.js';

/** min/median/max of a list of numbers. */
export function spread(xs: readonly number[]): { min: number; median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0] ?? NaN, median: s[Math.floor((s.length - 1) / 2)] ?? NaN, max: s[s.length - 1] ?? NaN };
}

/** Percentile `p` (0..100) of `xs` (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

/** One line of the table. `ratios` holds one ratio per run; `better` says which way passes. */
export interface Row {
  readonly id: string;
  readonly measure: string;
  readonly unit: string;
  readonly figures: readonly number[];
  readonly baselines: readonly number[] | null;
  readonly ratios: readonly number[] | null;
  readonly target: string;
  readonly pass: boolean;
  readonly note?: string;
  /**
   * A figure shown beside a row's target rather than judged (e.g. the physical limit of the
   * machine for an answer): its Result cell says `—`, with the note.
   */
  readonly info?: boolean;
}

const fmt = (n: number) => (Number.isFinite(n) ? (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2)) : '—');
const triple = (xs: readonly number[] | null) => {
  if (!xs || xs.length === 0) return '—';
  const s = spread(xs);
  return `${fmt(s.min)} / ${fmt(s.median)} / ${fmt(s.max)}`;
};

/** Renders the rows as a Markdown table (min / median / max per cell). */
export function table(rows: readonly Row[]): string {
  const head = '| # | Measure | Figure (min / median / max) | Baseline (min / median / max) | Ratio (min / median / max) | Target | Result |';
  const sep = '|---|---|---|---|---|---|---|';
  const lines = rows.map(
    (r) =>
      `| ${r.id} | ${r.measure} | ${triple(r.figures)} ${r.unit} | ${r.baselines ? `${triple(r.baselines)} ${r.unit}` : '—'} | ${triple(r.ratios)} | ${r.target} | ${r.info ? '—' : r.pass ? 'PASS' : 'MISS'}${r.note ? ` (${r.note})` : ''} |`,
  );
  return [head, sep, ...lines].join('\n');
}

/** Machine description for the results file. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.cpus().length} × ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}, Node ${process.version}`;
}

/** Whether a larger figure of `row` is the better one: rates (units per second) are, times, sizes and counts are not. */
export function higherIsBetter(row: Row): boolean {
  return row.unit.includes('/s');
}

/**
 * The A/B table of one run (`npm run bench` with BENCH_AB_BASE): each figure of this tree beside the
 * base build's, matched by row id and place among that id's rows, with the ratio of the medians (this ÷ base) and a
 * verdict: "not slower" when this tree's median is as good as the base's or better, "within the
 * spread" when it is worse than the base's median but not worse than every run of the base, and
 * "slower" when it is worse than every run of the base. A row repeating an earlier row's figures
 * against another baseline is left out.
 */
export function abTable(rows: readonly Row[], baseRows: readonly Row[]): string {
  const head = '| # | Measure | This tree (min / median / max) | Base (min / median / max) | This ÷ base (medians) | Better | Verdict |';
  const sep = '|---|---|---|---|---|---|---|';
  const seen = new Set<string>();
  const lines: string[] = [];
  const ordinal = new Map<string, number>();
  for (const r of rows) {
    // Rows pair by id and place among that id's rows: a measure's text may carry a figure of its run.
    const n = ordinal.get(r.id) ?? 0;
    ordinal.set(r.id, n + 1);
    const key = r.figures.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    const b = baseRows.filter((x) => x.id === r.id)[n];
    const up = higherIsBetter(r);
    const better = up ? 'higher' : 'lower';
    if (!b || b.figures.length === 0 || r.figures.length === 0) {
      lines.push(`| ${r.id} | ${r.measure} | ${triple(r.figures)} ${r.unit} | — | — | ${better} | no figure from the base |`);
      continue;
    }
    const t = spread(r.figures);
    const s = spread(b.figures);
    const worse = (x: number, y: number) => (up ? x < y : x > y);
    const worst = up ? s.min : s.max;
    const verdict = !worse(t.median, s.median) ? 'not slower' : worse(t.median, worst) ? 'slower' : 'within the spread';
    lines.push(`| ${r.id} | ${r.measure} | ${triple(r.figures)} ${r.unit} | ${triple(b.figures)} ${r.unit} | ${fmt(t.median / s.median)} | ${better} | ${verdict} |`);
  }
  return [head, sep, ...lines].join('\n');
}

/** Appends a run to bench/RESULTS.md, newest last (with `after`, e.g. the A/B table, below the note). */
export function appendResults(rows: readonly Row[], extra: string, after?: string): void {
  const when = `${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`;
  const text = `\n## ${when}\n\nMachine: ${machine()}\n\n${table(rows)}\n${extra ? `\n${extra}\n` : ''}${after ? `\n${after}\n` : ''}`;
  if (!fs.existsSync(RESULTS_FILE)) {
    fs.writeFileSync(
      RESULTS_FILE,
      '# Benchmark results\n\nWritten by `npm run bench`. Every figure is measured 3 times (min / median / max) and compared with a baseline measured in the same run on the same machine; the verdict uses the median ratio.\n',
    );
  }
  fs.appendFileSync(RESULTS_FILE, text);
}
