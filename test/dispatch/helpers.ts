/**
 * Shared fixtures for the dispatch tool tests: a throwaway copy of the bundled sample store
 * and a runner for the compiled tool as a real child process (the way the service runs it).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = path.join(REPO_ROOT, 'dist', 'dispatch', 'cli.js');
const SAMPLE_STORE = path.join(REPO_ROOT, 'sample-store');

/** Fails early, with the fix in the message, when the tool is not built or older than its sources. */
export function assertBuilt(): void {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  const srcDir = path.join(REPO_ROOT, 'src', 'dispatch');
  for (const name of fs.readdirSync(srcDir).filter((n) => n.endsWith('.ts'))) {
    const built = path.join(REPO_ROOT, 'dist', 'dispatch', name.replace(/\.ts$/, '.js'));
    if (!fs.existsSync(built) || fs.statSync(built).mtimeMs < fs.statSync(path.join(srcDir, name)).mtimeMs) {
      throw new Error(`${built} is missing or older than its source: run \`npm run build\` first`);
    }
  }
}

/** A fresh copy of `sample-store/` under the OS temp dir; returns its root. */
export function copySampleStore(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dispatch-test-'));
  const store = path.join(root, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  return store;
}

export function removeStore(store: string): void {
  fs.rmSync(path.dirname(store), { recursive: true, force: true });
}

export interface CliResult {
  code: number | null;
  stdout: string[];
  stderr: string[];
}

/** Runs `node dist/dispatch/cli.js <args>` against `store`; resolves with its exit code and lines. */
export function runCli(store: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, CONSOLE_DATA_DIR: store },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: lines(out), stderr: lines(err) }));
  });
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

export function projectDir(store: string, project: string): string {
  return path.join(store, 'projects', project);
}

export function readJson(file: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Every line of a project's receipts.jsonl, parsed (throws on a line that is not JSON). */
export function readReceipts(store: string, project: string): Array<Record<string, unknown>> {
  const file = path.join(projectDir(store, project), 'receipts.jsonl');
  if (!fs.existsSync(file)) return [];
  return lines(fs.readFileSync(file, 'utf8')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Sorted `relative path -> sha256` of every file under `dir`: equal snapshots mean nothing changed. */
export function snapshotTree(dir: string): Record<string, string> {
  const result: Record<string, string> = {};
  const walk = (sub: string): void => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else
        result[rel] = createHash('sha256')
          .update(fs.readFileSync(path.join(dir, rel)))
          .digest('hex');
    }
  };
  walk('');
  return Object.fromEntries(Object.entries(result).sort(([a], [b]) => (a < b ? -1 : 1)));
}
