/**
 * Runs the compiled engine CLI (dist/engine-cli/cli.js, built by `npm run build`) as a real
 * child process, and takes byte snapshots of a store to prove what a run wrote.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../helpers/service.js';

export const ENGINE_CLI = path.join(REPO_ROOT, 'dist', 'engine-cli', 'cli.js');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON (for `--json` runs). */
  json(): any;
}

/**
 * `node dist/engine-cli/cli.js ...args` with only PATH and `env` in its environment.
 * @param env normally `{ CONSOLE_DATA_DIR }`; without it the CLI uses the service's default store.
 */
export function runCli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGINE_CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code,
        stdout,
        stderr,
        json: () => JSON.parse(stdout),
      }),
    );
  });
}

/**
 * Runs a command as the service's `fix_cli` spells it (`npm run engine -- <args>`): the npm script
 * is `node dist/engine-cli/cli.js` (checked by a test), so the arguments after `--` go to the CLI.
 */
export function runFixCli(fixCli: string, env: Record<string, string>): Promise<CliResult> {
  const prefix = 'npm run engine -- ';
  if (!fixCli.startsWith(prefix)) throw new Error(`not an engine command: ${fixCli}`);
  return runCli(fixCli.slice(prefix.length).split(' '), env);
}

/** Every file under `dir` by relative path (with `/`), with its bytes. */
export function snapshot(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else out.set(r, fs.readFileSync(path.join(dir, r)));
    }
  };
  walk('');
  return out;
}

/** Paths whose bytes differ between two snapshots, or that exist in only one, sorted. */
export function changedFiles(before: Map<string, Buffer>, after: Map<string, Buffer>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys]
    .filter((k) => {
      const a = before.get(k);
      const b = after.get(k);
      return a === undefined || b === undefined || !a.equals(b);
    })
    .sort();
}

export function readJsonFile(file: string): any {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export function editJson(file: string, edit: (doc: any) => void): void {
  const doc = readJsonFile(file);
  edit(doc);
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
}
