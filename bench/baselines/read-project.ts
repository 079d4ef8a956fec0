/**
 * P8 floors: what reading the store costs with nothing around it, in one thread.
 * - `all <project dir>`: reads and `JSON.parse`s `project.json` and every file of `shots/` and
 *   `takes/` (listing included), synchronously, one after the other; prints {ms, files, bytes}.
 * - `watch <takes dir>`: watches the folder (fs.watch, as the service's watcher does); for each
 *   new `<id>.json` that appears, reads and parses it, then prints
 *   {name, doneAt (wall-clock ms), readMs}. Prints `ready` first; runs until stdin closes.
 *   This is "the time to re-read the files that changed", noticing the change included.
 */
import fs from 'node:fs';
import path from 'node:path';

const [mode, dir] = process.argv.slice(2) as [string, string];
const wall = () => performance.timeOrigin + performance.now();

if (mode === 'all') {
  const t0 = performance.now();
  let files = 0;
  let bytes = 0;
  const read = (file: string) => {
    const text = fs.readFileSync(file, 'utf8');
    JSON.parse(text);
    files++;
    bytes += text.length;
  };
  read(path.join(dir, 'project.json'));
  for (const sub of ['shots', 'takes']) {
    for (const name of fs.readdirSync(path.join(dir, sub))) if (name.endsWith('.json') && !name.startsWith('.')) read(path.join(dir, sub, name));
  }
  process.stdout.write(`${JSON.stringify({ ms: performance.now() - t0, files, bytes })}\n`);
} else if (mode === 'watch') {
  const seen = new Set<string>();
  fs.watch(dir, (_event, name) => {
    const file = name === null ? null : String(name);
    if (file === null || file.startsWith('.') || !file.endsWith('.json') || seen.has(file)) return;
    const t0 = performance.now();
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, file), 'utf8');
    } catch {
      return; // not there (yet)
    }
    JSON.parse(text);
    seen.add(file);
    process.stdout.write(`${JSON.stringify({ name: file, doneAt: wall(), readMs: performance.now() - t0 })}\n`);
  });
  process.stdout.write('ready\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else {
  process.stderr.write('usage: read-project all <project dir> | watch <takes dir>\n');
  process.exit(2);
}
