// The process's descriptor limit (RLIMIT_NOFILE). A soft limit far below the hard one lets a few hundred
// idle streams starve everything else, so start-up raises it to the hard one with `prlimit` (Node has no call).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** The limits (descriptors), and what raising did. */
export interface DescriptorLimits {
  readonly soft: number;
  readonly hard: number;
  /** The soft limit before start-up raised it; null when it was not raised. */
  readonly raisedFrom: number | null;
  /** Why it could not be raised (no `prlimit`, refused); null when it was, or needed not be. */
  readonly error: string | null;
}

/** The soft and hard "Max open files" of this process (Infinity for unlimited), from /proc. */
export function readDescriptorLimits(): { soft: number; hard: number } {
  const line = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = (line?.slice('Max open files'.length).trim().split(/\s+/) ?? []).map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return { soft: soft ?? NaN, hard: hard ?? NaN };
}

/** Raises the soft limit to the hard one. Never throws: a failure is reported in the result. */
export function raiseDescriptorLimit(): DescriptorLimits {
  const before = readDescriptorLimits();
  if (!(before.soft < before.hard)) return { ...before, raisedFrom: null, error: null };
  const hard = Number.isFinite(before.hard) ? String(before.hard) : 'unlimited';
  try {
    execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${hard}:${hard}`], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  } catch (err) {
    return { ...before, raisedFrom: null, error: `prlimit could not raise it: ${(err as Error).message.split('\n')[0]}` };
  }
  const after = readDescriptorLimits();
  return { ...after, raisedFrom: after.soft > before.soft ? before.soft : null, error: after.soft > before.soft ? null : 'prlimit left it unchanged' };
}

/** Descriptors open now (entries of /proc/self/fd), or null when they cannot be counted. */
export function openDescriptors(): number | null {
  try {
    return fs.readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}
