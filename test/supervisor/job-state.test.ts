/**
 * The generation job transition table (spec: States and transitions, "Generation job"),
 * walked row by row, plus the `lost` row (a job found running after the service died) and
 * every combination the table has no row for; and one job's machine (JobMachine, run on the job I/O thread) through it.
 */
import { describe, expect, it } from 'vitest';
import { InvalidTransitionError, JobMachine, transition, type JobStatus, type JobTrigger } from '../../src/supervisor/job-state.js';

const running: JobStatus = { state: 'running' };
const exitedOk: JobStatus = { state: 'exited ok', rc: 0, signal: null };
const exitedFailed: JobStatus = { state: 'exited failed', rc: 3, signal: null };
const lost: JobStatus = { state: 'lost' };

describe('transition: the rows of the spec table', () => {
  it('(none) + generation request accepted -> running, info (the spawn event)', () => {
    expect(transition(null, { kind: 'accepted' })).toEqual({ next: { state: 'running' }, severity: 'info' });
  });

  it('running + a stdout line -> running, info', () => {
    expect(transition(running, { kind: 'stdout-line' })).toEqual({ next: { state: 'running' }, severity: 'info' });
  });

  it('running + a stderr line -> running, warning', () => {
    expect(transition(running, { kind: 'stderr-line' })).toEqual({ next: { state: 'running' }, severity: 'warning' });
  });

  it('running + exit with code 0 -> exited ok, success', () => {
    expect(transition(running, { kind: 'exit', rc: 0, signal: null })).toEqual({
      next: { state: 'exited ok', rc: 0, signal: null },
      severity: 'success',
    });
  });

  it.each([1, 2, 3, 255])('running + exit with code %i -> exited failed, failure, keeping the code', (rc) => {
    expect(transition(running, { kind: 'exit', rc, signal: null })).toEqual({
      next: { state: 'exited failed', rc, signal: null },
      severity: 'failure',
    });
  });

  it('running + exit by a signal (rc 128 + n) -> exited failed, failure, keeping the signal', () => {
    expect(transition(running, { kind: 'exit', rc: 143, signal: 'SIGTERM' })).toEqual({
      next: { state: 'exited failed', rc: 143, signal: 'SIGTERM' },
      severity: 'failure',
    });
    expect(transition(running, { kind: 'exit', rc: 137, signal: 'SIGKILL' })).toEqual({
      next: { state: 'exited failed', rc: 137, signal: 'SIGKILL' },
      severity: 'failure',
    });
  });

  it('running + lost (found running after the service died) -> lost, failure', () => {
    expect(transition(running, { kind: 'lost' })).toEqual({ next: { state: 'lost' }, severity: 'failure' });
  });
});

describe('transition: combinations without a row throw', () => {
  const triggers: JobTrigger[] = [
    { kind: 'accepted' },
    { kind: 'stdout-line' },
    { kind: 'stderr-line' },
    { kind: 'exit', rc: 0, signal: null },
    { kind: 'exit', rc: 1, signal: null },
    { kind: 'lost' },
  ];
  type Case = [string, string, JobStatus | null, JobTrigger];
  const cases: Case[] = [
    ...triggers.filter((t) => t.kind !== 'accepted').map((t): Case => ['(none)', JSON.stringify(t), null, t]),
    ['running', JSON.stringify({ kind: 'accepted' }), running, { kind: 'accepted' }],
    ...[exitedOk, exitedFailed, lost].flatMap((s) => triggers.map((t): Case => [s.state, JSON.stringify(t), s, t])),
  ];

  it.each(cases)('from %s on %s', (_state, _trigger, current, trigger) => {
    expect(() => transition(current, trigger)).toThrow(InvalidTransitionError);
    expect(() => transition(current, trigger)).toThrow(`no transition from ${current?.state ?? '(none)'} on ${trigger.kind}`);
  });
});

describe('JobMachine: one job through the table, as the job I/O thread runs it', () => {
  it('accepts, counts each line with its row’s severity, and ends ok by itself', () => {
    const m = new JobMachine();
    expect(m.accepted).toBe('info');
    expect([m.line(0, 'a'), m.line(1, 'careful'), m.line(0, 'b')]).toEqual(['info', 'warning', 'info']);
    expect(m.end(0, null)).toEqual({ status: exitedOk, severity: 'success', exitReason: 'exited', exitDetail: null, stdoutLines: 2, stderrLines: 1 });
  });

  it('ends failed with its last stderr line as the detail, and the first stop request as the reason', () => {
    const m = new JobMachine();
    m.line(1, 'first words');
    m.line(1, 'last words');
    m.line(0, 'after them');
    m.stop('shutdown');
    m.stop('cancelled');
    expect(m.end(143, 'SIGTERM')).toEqual({
      status: { state: 'exited failed', rc: 143, signal: 'SIGTERM' },
      severity: 'failure',
      exitReason: 'shutdown',
      exitDetail: 'last words',
      stdoutLines: 1,
      stderrLines: 2,
    });
  });

  it('refuses a line or a second exit after its end (no row: a bug)', () => {
    const m = new JobMachine();
    m.end(3, null);
    expect(() => m.line(0, 'late')).toThrow(InvalidTransitionError);
    expect(() => m.end(0, null)).toThrow('no transition from exited failed on exit');
  });
});
