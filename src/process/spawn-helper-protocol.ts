/** The messages between the service and its spawn helper process (spawn-helper.ts, spawn-helper-main.ts). */
import type { BirthPriority } from './group-nice.js';

/** Bytes a stdio connection starts with: the order's id (16 hex digits), then `o` (stdout) or `e` (stderr). */
export const TAG_BYTES = 17;

/**
 * How the jobs are grouped for the scheduler (spawn-helper-main.ts): `shared`, every job in the helper's session (one
 * autogroup for all), each leading a process group of its own; `one per job`, each job leading a session of its own.
 */
export type JobSessions = 'shared' | 'one per job';

/** Where the spawn helper looks for perl (without `--perl=`), in order: it starts each job through it in the shared mode. */
export const PERL_PLACES: readonly string[] = ['/usr/bin/perl', '/bin/perl', '/usr/local/bin/perl'];

/** One spawn: the program, its arguments and environment; which streams arrive as tagged connections. */
export interface SpawnOrder {
  readonly kind: 'spawn';
  /** 16 hex digits, the tag of its stdio connections. */
  readonly id: string;
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly stdout: boolean;
  readonly stderr: boolean;
  /** A nice value (1..19) set on the process and its autogroup right after its exec, before it is reported; absent or 0: left. */
  readonly nice?: number;
}

export type ToHelper = SpawnOrder;

export type FromHelper =
  /** Listening: connections for stdio go to `socket` (a unix socket in a directory only this user reads). */
  | { readonly kind: 'ready'; readonly socket: string; readonly sessions: JobSessions }
  /** Running as `pid` (its own process-group leader, or about to be: perl's setpgrp may follow this), started at `startTime` (clock ticks after boot, /proc's field 22); `lowered` when the order asked for a nice value. */
  | { readonly kind: 'spawned'; readonly id: string; readonly pid: number; readonly startTime: number | null; readonly lowered: BirthPriority | null }
  /** Not started: the errno code (`ENOENT`, `EAGAIN`…) when the OS gave one. */
  | { readonly kind: 'refused'; readonly id: string; readonly code: string | null; readonly message: string }
  /** Reaped. */
  | { readonly kind: 'exit'; readonly id: string; readonly code: number | null; readonly signal: NodeJS.Signals | null };
