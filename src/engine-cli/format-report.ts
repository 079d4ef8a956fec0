/** Human-readable output of the engine CLI: one line per finding, change or step. */
import type { DoctorReport } from './doctor.js';
import type { Change, Finding } from './findings.js';
import type { MigrationPlan, MigrationStep } from './migrate.js';

/** The doctor's report: each project with its findings, then memory, then a result line. */
export function formatDoctorReport(r: DoctorReport): string[] {
  const lines = [`engine store: ${r.store}`];
  for (const p of r.projects) {
    const head = p.status === 'legacy' ? 'legacy' : counts(p.findings) || `ok (${plural(p.files, 'file')})`;
    lines.push(`${p.id}: ${head}`);
    lines.push(...p.findings.flatMap(findingLines));
  }
  lines.push(`memory: ${counts(r.memory.findings) || `ok (${plural(r.memory.files, 'entry', 'entries')})`}`);
  lines.push(...r.memory.findings.flatMap(findingLines));
  if (r.store_findings.length > 0) {
    lines.push(`store: ${counts(r.store_findings)}`);
    lines.push(...r.store_findings.flatMap(findingLines));
  }
  const scope = `${plural(r.projects.length, 'project')} and ${plural(r.memory.files, 'memory entry', 'memory entries')}`;
  lines.push(r.errors + r.warnings === 0 ? `result: healthy (${scope})` : `result: ${plural(r.errors, 'error')}, ${plural(r.warnings, 'warning')} in ${scope}`);
  return lines;
}

/** One line per change made by `doctor --fix`. */
export function formatChanges(changes: readonly Change[]): string[] {
  if (changes.length === 0) return ['fixed: nothing that can be derived'];
  return changes.map((c) => {
    const what = 'from' in c ? `changed "${c.field}" from ${JSON.stringify(c.from)} to` : `set "${c.field}" to`;
    const note = c.placeholder ? ' (a placeholder: replace it with the real value)' : '';
    return `fixed ${c.file}: ${what} ${JSON.stringify(c.to)}${note}`;
  });
}

/** The plan (or what was done) of a migration. */
export function formatMigration(plan: MigrationPlan, done: 'planned' | 'migrated' | 'already_migrated' | 'refused'): string[] {
  const where = `projects/${plan.project_id}`;
  const lines = [`migrate ${where}${plan.reason === null ? '' : `: legacy project format: ${plan.reason}`}`];
  if (plan.state === 'interrupted') lines.push('  (resuming a run that stopped: the legacy files are read from legacy/)');
  lines.push(...plan.problems.map((p) => `  problem ${p}`));
  lines.push(...plan.steps.map(stepLine));
  switch (done) {
    case 'planned':
      lines.push(plan.steps.length === 0 ? 'dry run: nothing to do' : 'dry run: nothing written');
      break;
    case 'migrated':
      lines.push(`migrated ${plan.project_id} to format 2; the legacy files are kept under ${where}/legacy/`);
      break;
    case 'already_migrated':
      lines.push(`${plan.project_id} is already migrated to format 2 (legacy files under ${where}/legacy/): nothing else to do`);
      break;
    case 'refused':
      lines.push(`refused: nothing written`);
      break;
  }
  return lines;
}

function stepLine(s: MigrationStep): string {
  switch (s.action) {
    case 'preserve':
      return `  copy    ${s.file} → ${s.to}`;
    case 'write':
      return `  write   ${s.file} from ${s.from}${s.notes.length > 0 ? `: ${s.notes.join('; ')}` : ''}`;
    case 'remove':
      return `  remove  ${s.file} (kept as ${s.kept})`;
  }
}

function findingLines(f: Finding): string[] {
  const field = f.field !== null && f.code !== 'legacy_format' ? `"${f.field}" ` : '';
  return [`  ${f.severity.padEnd(7)} ${f.file}: ${field}${f.problem}`, `          fix: ${f.fix}`];
}

function counts(findings: readonly Finding[]): string {
  const e = findings.filter((f) => f.severity === 'error').length;
  const w = findings.length - e;
  return [e > 0 ? plural(e, 'error') : '', w > 0 ? plural(w, 'warning') : ''].filter(Boolean).join(', ');
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
