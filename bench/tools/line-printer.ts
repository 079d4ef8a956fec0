/**
 * A tiny dispatch tool for the benchmarks: accepts the real tool's flags, prints
 * `BENCH_LINES` lines (default 3) on stdout in large writes, and exits 0. Each line is
 * `line <n> <padding>` so the lines are of realistic length (about 40 bytes).
 */
const n = Number(process.env.BENCH_LINES ?? 3);
const pad = 'abcdefghijklmnopqrstuvwxyz0123';
const CHUNK = 2000;
let i = 1;
function writeSome(): void {
  while (i <= n) {
    let text = '';
    const end = Math.min(n, i + CHUNK - 1);
    for (; i <= end; i++) text += `line ${i} ${pad}\n`;
    if (!process.stdout.write(text)) {
      process.stdout.once('drain', writeSome);
      return;
    }
  }
}
writeSome();
