/**
 * Time-outs of the suite and ceilings of its waits: safety nets against a hang, never
 * assertions on time. They are sized for a loaded machine: beside two CPU-bound processes on
 * 2 cores the suite runs 3–4 times slower than idle, and jobs (at CONSOLE_JOB_NICE 19) wait
 * longer still for the CPU.
 */
import { TestRunner } from 'vitest';

/** Default time-out of a test, and of a hook (vitest.config.ts). */
export const TEST_TIMEOUT_MS = 180_000;
export const HOOK_TIMEOUT_MS = 180_000;

/** Given up before vitest times the test out, so the failure names what was awaited. */
const MARGIN_MS = 2_000;

/**
 * How long a wait with no ceiling of its own may last: until shortly before the running test
 * times out (a wait then lasts as long as the test that waits may, and no longer); in a hook,
 * which vitest does not expose, the hook's time-out from now.
 */
export function waitCeilingMs(): number {
  const test = TestRunner.getCurrentTest();
  const started = test?.result?.startTime;
  if (test === undefined || started === undefined) return HOOK_TIMEOUT_MS - MARGIN_MS;
  return Math.max(started + test.timeout - MARGIN_MS - Date.now(), 1_000);
}

/**
 * The environment the helpers give every service they start (a test's own env overrides it): jobs at
 * nice 0, not CONSOLE_JOB_NICE's 19. Beside CPU-bound processes a job at 19 (its autogroup too) gets
 * about 1.5% of a CPU, by design; the tests that wait for jobs' output are not about that, and
 * waited minutes for it (a 3,000-line job of the chaos run, a burst the other burst finished
 * before). test/supervisor/job-priority.test.ts sets and checks the priority itself.
 * Idle kept-alive connections stay open 60 s, not Node's 5 s: a test process that holds its event loop past the
 * server's time-out on a loaded machine (the in-process services share it) has fetch reuse a socket the server is
 * closing ("other side closed", ECONNRESET). test/http/keep-alive.test.ts checks the setting itself.
 */
export const TEST_SERVICE_ENV: Readonly<Record<string, string>> = { CONSOLE_JOB_NICE: '0', CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000' };
