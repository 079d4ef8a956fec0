/**
 * Runs one engine CLI command (README, "Engine doctor and migrate") and returns its exit code:
 * 0 success (a healthy store, a migration done, planned or already done), 1 problems found or
 * migration refused, 2 usage error (bad command line, bad configuration, unknown project).
 */
import fs from 'node:fs';
import { ConfigError, readConfig } from '../config/config.js';
import { storeAccess, type StoreAccess } from '../engine/read-store-file.js';
import { applyFixes, diagnose, isProject, type DoctorReport } from './doctor.js';
import { formatChanges, formatDoctorReport, formatMigration } from './format-report.js';
import { executeMigration, planMigration } from './migrate.js';
import { parseEngineArgs, USAGE, UsageError, type EngineArgs } from './parse-args.js';
import type { Change } from './findings.js';

export interface EngineIo {
  /** One line of the command's output (stdout). */
  out(line: string): void;
  /** One line of diagnostics (stderr). */
  err(line: string): void;
}

export interface EngineRun {
  /** Arguments after the script path. */
  readonly argv: readonly string[];
  /** The environment, read through the service's own `readConfig`. */
  readonly env: NodeJS.ProcessEnv;
  readonly io: EngineIo;
}

export function runEngine({ argv, env, io }: EngineRun): number {
  let args: EngineArgs;
  let root: string;
  let access: StoreAccess;
  try {
    args = parseEngineArgs(argv);
    if (args.command === 'help') {
      io.out(USAGE);
      return 0;
    }
    ({ root, access } = storeRoot(env, io));
    if (args.project !== null && !isProject(access, args.project)) {
      throw new UsageError(`no project ${JSON.stringify(args.project)} in ${root}/projects (a directory with project.json or project.yaml)`);
    }
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof ConfigError)) throw err;
    io.err(`engine: ${err.message}`);
    if (err instanceof UsageError) io.err(USAGE);
    return 2;
  }
  return args.command === 'doctor' ? doctor(root, access, args, io) : migrate(root, access, args, io);
}

/**
 * The store the service would serve, with its bounds; a missing default copy of the bundled sample
 * store is seeded as the service seeds it, so both look at the same files.
 * @throws UsageError when the store directory does not exist; ConfigError for a bad variable.
 */
function storeRoot(env: NodeJS.ProcessEnv, io: EngineIo): { root: string; access: StoreAccess } {
  const config = readConfig(env);
  if (config.sampleSeedDir !== null && !fs.existsSync(config.dataDir)) {
    fs.cpSync(config.sampleSeedDir, config.dataDir, { recursive: true });
    io.err(`engine: copied the bundled sample store to ${config.dataDir}, as the service does on its first start`);
  }
  if (!fs.statSync(config.dataDir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`engine store not found: ${config.dataDir} (CONSOLE_DATA_DIR)`);
  }
  return { root: config.dataDir, access: storeAccess(config.dataDir, config.store) };
}

function doctor(root: string, access: StoreAccess, args: Extract<EngineArgs, { command: 'doctor' }>, io: EngineIo): number {
  let report: DoctorReport = diagnose(root, args.project, access);
  let changes: Change[] | null = null;
  if (args.fix) {
    changes = applyFixes(root, report, access);
    report = diagnose(root, args.project, access);
  }
  if (args.json) {
    io.out(JSON.stringify({ ...report, healthy: healthy(report, args.strict), ...(changes ? { fixed: changes } : {}) }, null, 2));
  } else {
    if (changes) {
      for (const line of formatChanges(changes)) io.out(line);
      if (changes.length > 0) io.out('after the fixes:');
    }
    for (const line of formatDoctorReport(report)) io.out(line);
  }
  return healthy(report, args.strict) ? 0 : 1;
}

function healthy(r: DoctorReport, strict: boolean): boolean {
  return r.errors === 0 && (!strict || r.warnings === 0);
}

function migrate(root: string, access: StoreAccess, args: Extract<EngineArgs, { command: 'migrate' }>, io: EngineIo): number {
  const plan = planMigration(root, args.project, access);
  const outcome = plan.problems.length > 0 ? 'refused' : args.dryRun ? 'planned' : plan.state === 'migrated' ? 'already_migrated' : 'migrated';
  if (outcome !== 'refused' && !args.dryRun) executeMigration(plan);
  if (args.json) {
    io.out(JSON.stringify({ store: root, outcome, ...plan }, null, 2));
  } else {
    for (const line of formatMigration(plan, outcome)) io.out(line);
  }
  if (outcome === 'refused') io.err(`engine: migrate refused for ${plan.project_id}: ${plan.problems.join('; ')}`);
  return outcome === 'refused' ? 1 : 0;
}
