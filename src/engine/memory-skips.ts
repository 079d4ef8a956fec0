/** Memory entry files left out of `GET /api/memory`: one bad file never fails the list; each is reported once per reason. */
import type { Bus } from '../bus/bus.js';
import { missingFieldReason } from './errors.js';
import type { SkippedMemoryEntry } from './store-reads.js';

export class MemorySkipReporter {
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly bus: Pick<Bus, 'publish'>,
    private readonly log: (fields: Record<string, unknown>, message: string) => void,
  ) {}

  /** Reports each new or changed skipped file by a warning event; files no longer skipped are forgotten. */
  report(skipped: readonly SkippedMemoryEntry[]): void {
    const names = new Set(skipped.map((e) => e.name));
    for (const name of this.reported.keys()) if (!names.has(name)) this.reported.delete(name);
    for (const { name, detail } of skipped) {
      if (this.reported.get(name) === detail.remediation) continue;
      this.reported.set(name, detail.remediation);
      const file = `memory/${name}`;
      const why = missingFieldReason(detail);
      const reason = why === 'is missing' ? `missing canonical field ${detail.field}` : `canonical field ${detail.field} ${why}`;
      this.log({ file, remediation: detail.remediation }, `engine store: memory entry skipped: ${file} (${reason})`);
      this.bus.publish({
        severity: 'warning',
        scope: 'engine/memory',
        summary: `memory entry skipped: ${file} (${reason})`,
        detail: detail.remediation,
        payload: { file, field: detail.field, project_id: detail.project_id, fix_cli: detail.fix_cli },
      });
    }
  }
}
