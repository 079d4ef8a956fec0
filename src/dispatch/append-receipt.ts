import { open } from 'node:fs/promises';
import path from 'node:path';

/** How a run ended. `failed` covers an unknown shot as well as unexpected errors. */
export type Outcome = 'rendered' | 'planned' | 'nothing_to_do' | 'failed';

/** One line of `projects/<id>/receipts.jsonl` (engine-format.md §The dispatch tool); `time` has milliseconds. */
export interface Receipt {
  time: string;
  argv: string[];
  project: string;
  shot: string | null;
  model: string;
  dry_run: boolean;
  outcome: Outcome;
  take_id: string | null;
}

/** Appends one receipt line, fsynced, in a single O_APPEND write so concurrent runs never interleave. @throws Error on an fs error or a short write. */
export async function appendReceipt(projectDir: string, receipt: Receipt): Promise<void> {
  const line = Buffer.from(`${JSON.stringify(receipt)}\n`, 'utf8');
  const handle = await open(path.join(projectDir, 'receipts.jsonl'), 'a');
  try {
    const { bytesWritten } = await handle.write(line, 0, line.length, null);
    if (bytesWritten !== line.length) {
      throw new Error(`short write to receipts.jsonl (${bytesWritten} of ${line.length} bytes)`);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}
