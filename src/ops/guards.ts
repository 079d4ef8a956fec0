// Start-up guards (spec: What the service does, startup guards); deliberately no environment override.
import { ServiceError } from '../errors/index.js';
import type { Registries } from '../registry/index.js';

/** Thrown when a start-up guard fails (code `startup_guard_failed`); `message` lists every offending name. */
export class StartupGuardError extends ServiceError<'startup_guard_failed'> {
  override name = 'StartupGuardError';
  constructor(
    message: string,
    readonly expiredFallbacks: readonly { name: string; retireBy: string }[],
    readonly deadKinds: readonly string[],
  ) {
    super('startup_guard_failed', message);
  }
}

/** Result of the guards, reported by `GET /api/system-status`. */
export interface GuardReport {
  readonly checkedOn: string;
  readonly fallbacks: readonly { name: string; retireBy: string | null }[];
  readonly proposalKinds: readonly { name: string; label: string; hasExecutor: boolean }[];
}

/** Today's date as `YYYY-MM-DD` in UTC. */
export function utcDate(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/**
 * Runs the fallback retirement gate and the proposal executor gate.
 * @param today `YYYY-MM-DD` (UTC); injected by tests.
 * @throws StartupGuardError listing each expired fallback as `name (retire_by <date>)` and each dead kind.
 */
export function checkStartupGuards(registries: Registries, today: string): GuardReport {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(today)) throw new RangeError(`today must be YYYY-MM-DD, got ${today}`);
  const expired = registries.fallbacks.filter((f) => f.retireBy !== null && f.retireBy < today).map((f) => ({ name: f.name, retireBy: f.retireBy as string }));
  const dead = registries.proposalKinds.filter((k) => k.executor === null).map((k) => k.name);
  const problems: string[] = [];
  if (expired.length > 0) {
    problems.push(`expired sanctioned fallbacks: ${expired.map((f) => `${f.name} (retire_by ${f.retireBy})`).join(', ')}`);
  }
  if (dead.length > 0) problems.push(`proposal kinds without executor: ${dead.join(', ')}`);
  if (problems.length > 0) {
    throw new StartupGuardError(`startup guard failed: ${problems.join('; ')}`, expired, dead);
  }
  return {
    checkedOn: today,
    fallbacks: registries.fallbacks.map((f) => ({ name: f.name, retireBy: f.retireBy })),
    proposalKinds: registries.proposalKinds.map((k) => ({
      name: k.name,
      label: k.label,
      hasExecutor: k.executor !== null,
    })),
  };
}
