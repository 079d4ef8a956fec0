// Figures in human units for the status view and the charts: bytes in KiB/MiB/GiB, durations in
// ms, s, min and h, rates per second, shares in percent, counts with what they count. Each
// returns `{ text, unit }` so the page shows the unit apart (and a test finds it on every figure).

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** Up to three significant digits, no trailing zeros: 8, 8.5, 12.3, 256. */
function short(n) {
  if (!Number.isFinite(n)) return '—';
  const abs = Math.abs(n);
  const digits = abs === 0 || abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return Number(n.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits });
}

/** A whole number with thousands separators: 10,000. */
export function grouped(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** Bytes: `{ text: '8', unit: 'MiB' }` (powers of 1024, as the limits are set). */
export function bytes(n) {
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return { text: short(v), unit: BYTE_UNITS[i] };
}

/** A duration given in milliseconds: `0.4 ms`, `850 ms`, `1.2 s`, `2 min 05 s`, `3 h 04 min`. */
export function duration(ms) {
  if (!Number.isFinite(ms)) return { text: '—', unit: 'ms' };
  if (ms < 1000) return { text: short(ms), unit: 'ms' };
  const s = ms / 1000;
  if (s < 60) return { text: short(s), unit: 's' };
  const whole = Math.floor(s);
  const m = Math.floor(whole / 60);
  if (m < 60) return { text: `${m} min ${String(whole % 60).padStart(2, '0')}`, unit: 's' };
  const hours = Math.floor(m / 60);
  if (hours < 48) return { text: `${hours} h ${String(m % 60).padStart(2, '0')}`, unit: 'min' };
  return { text: `${Math.floor(hours / 24)} d ${String(hours % 24).padStart(2, '0')}`, unit: 'h' };
}

/** Seconds (the API's unit for latencies and delays) as a duration. */
export function seconds(s) {
  return duration(s * 1000);
}

/** A ratio 0..1 in percent: `12.3 %`, `< 0.1 %` for a small share that is not none. */
export function percent(ratio) {
  const p = ratio * 100;
  if (p > 0 && p < 0.1) return { text: '< 0.1', unit: '%' };
  return { text: short(p), unit: '%' };
}

/** A rate: `{ text: '1,234', unit: 'lines/s' }`. */
export function rate(n, what) {
  return { text: n >= 1000 ? grouped(n) : short(n), unit: `${what}/s` };
}

/** A count of things: `{ text: '3', unit: 'jobs' }`, `{ text: '1', unit: 'job' }`. */
export function count(n, plural, singular = plural.replace(/s$/, '')) {
  return { text: grouped(n), unit: Math.round(n) === 1 ? singular : plural };
}

/**
 * A figure of the history in human units, by its API unit (`seconds`, `bytes`, `ratio`,
 * `lines/s`, `events/s`, or a noun).
 */
export function byUnit(value, unit) {
  if (value === null || value === undefined) return { text: '—', unit: unit === 'ratio' ? '%' : unit === 'seconds' ? 'ms' : unit === 'bytes' ? 'B' : unit };
  if (unit === 'seconds') return seconds(value);
  if (unit === 'bytes') return bytes(value);
  if (unit === 'ratio') return percent(value);
  if (unit.endsWith('/s')) return rate(value, unit.slice(0, -2));
  return count(value, unit);
}

/** How long ago an ISO time was, in words: `42 s ago`. */
export function ago(iso, now = Date.now()) {
  const d = duration(Math.max(0, now - Date.parse(iso)));
  return `${d.text} ${d.unit} ago`;
}
