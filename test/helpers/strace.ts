/**
 * Watching the files a process touches with strace (`-e trace=%file`: open, stat, access,
 * readlink, mkdir… every system call that takes a file name), following its threads and
 * children. `-y` prints the path behind each descriptor, so names relative to a directory
 * descriptor resolve too. Children (anything that calls execve) are left out: the service's
 * jobs and terminals are other programs.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';

export function hasStrace(): boolean {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
}

/** The words to put before the command: stops only at file calls (seccomp), full path strings. */
export function straceWrapper(outFile: string): string[] {
  return ['strace', '-f', '--seccomp-bpf', '-qq', '-y', '-s', '16384', '-e', 'trace=%file', '-o', outFile];
}

/** One file name a call used. */
export interface FileAccess {
  readonly pid: number;
  readonly call: string;
  readonly path: string;
  readonly line: string;
}

/** Reads a C-style string strace printed, from the opening quote at `at`; returns it and the index after it. */
function readQuoted(s: string, at: number): { value: string; end: number } {
  let out = '';
  let i = at + 1;
  for (; i < s.length && s[i] !== '"'; i++) {
    if (s[i] === '\\') {
      const n = s[i + 1];
      if (n === 'x') {
        out += String.fromCharCode(parseInt(s.slice(i + 2, i + 4), 16));
        i += 3;
      } else if (n !== undefined && /[0-7]/.test(n)) {
        const m = /^[0-7]{1,3}/.exec(s.slice(i + 1)) as RegExpExecArray;
        out += String.fromCharCode(parseInt(m[0], 8));
        i += m[0].length;
      } else {
        out += n === 'n' ? '\n' : n === 't' ? '\t' : (n ?? '');
        i += 1;
      }
    } else {
      out += s[i];
    }
  }
  return { value: out, end: i + 1 };
}

/**
 * The file names in one strace line: each quoted argument, resolved against the directory
 * descriptor before it (`AT_FDCWD</cwd>` or `3</dir>`); an empty name with AT_EMPTY_PATH is
 * the descriptor's own file. Only the input arguments count: what a call writes back (the
 * target of a readlink, struct contents) is not a file it touched.
 */
export function namesIn(line: string): { pid: number; call: string; paths: string[] } | null {
  const m = /^(\d+)\s+(?:<\.\.\. )?(\w+)(?: resumed>)?\(?/.exec(line);
  if (!m) return null;
  const pid = Number(m[1]);
  const call = m[2] as string;
  if (line.includes(' resumed>')) return { pid, call, paths: [] };
  const paths: string[] = [];
  let i = m[0].length;
  let dir: string | null = null;
  let strings = 0;
  // readlink/readlinkat: the second string is the result. execve: argv strings follow the program.
  const maxStrings = call === 'readlink' || call === 'readlinkat' || call === 'execve' || call === 'execveat' ? 1 : 2;
  while (i < line.length) {
    const c = line[i];
    if (c === '{' || (c === ')' && line.slice(i).startsWith(') ='))) break;
    const fd = /^(?:AT_FDCWD|\d+)<([^>]*)>/.exec(line.slice(i));
    if (fd) {
      dir = fd[1] as string;
      i += fd[0].length;
      continue;
    }
    if (c === '"') {
      const { value, end } = readQuoted(line, i);
      i = end;
      if (strings++ >= maxStrings) break;
      if (value === '' && dir !== null) paths.push(dir);
      else if (value !== '') paths.push(path.isAbsolute(value) || dir === null ? value : path.join(dir, value));
      dir = null;
      continue;
    }
    if (c === '[') break; // an argv array
    i++;
  }
  return { pid, call, paths };
}

/**
 * Every file name the traced process used after the first line that mentions `marker`,
 * children left out.
 * @returns the accesses and the number of child processes left out.
 */
export function accessesAfter(traceFile: string, marker: string): { accesses: FileAccess[]; children: number } {
  const lines = fs.readFileSync(traceFile, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.includes(marker));
  if (start < 0) throw new Error(`the marker ${marker} is not in the trace`);
  const parsed = lines.slice(start).map((l) => ({ l, p: namesIn(l) }));
  // Anything that execs after the marker is a child program (jobs, terminals), not the service.
  const children = new Set(parsed.filter((x) => x.p && (x.p.call === 'execve' || x.p.call === 'execveat')).map((x) => (x.p as { pid: number }).pid));
  const accesses: FileAccess[] = [];
  for (const { l, p } of parsed) {
    if (!p || children.has(p.pid)) continue;
    for (const name of p.paths) accesses.push({ pid: p.pid, call: p.call, path: path.normalize(name), line: l });
  }
  return { accesses, children: children.size };
}

/** Whether `file` is `dir` or inside it. */
export const within = (file: string, dir: string): boolean => file === dir || file.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** Fails, naming the package, where strace is missing: the tests that watch system calls never skip. */
export function requireStrace(): void {
  if (!hasStrace()) throw new Error('this test needs strace on PATH (apt-get install strace)');
}

/** strace attached to one thread (`-p <tid>`), writing to `file`: its exit, and whether it has attached yet. */
export interface ThreadTrace {
  readonly file: string;
  readonly strace: ChildProcess;
  readonly exited: Promise<unknown>;
  attached(): boolean;
}

/** Attaches strace with `args` to thread `tid`, its output in `file`; `cleanup` gets its kill. */
export function traceThread(tid: number, file: string, args: readonly string[], cleanup: (fn: () => unknown) => void): ThreadTrace {
  const strace = spawn('strace', [...args, '-p', String(tid), '-o', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  strace.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  cleanup(() => strace.kill('SIGKILL'));
  return { file, strace, exited: once(strace, 'exit'), attached: () => /attached/.test(err) };
}
