/**
 * Vitest global set-up (vitest.config.ts): every service a test starts records its answers
 * (CONSOLE_RECORD_ANSWERS_DIR, src/http/answer-recorder.ts), and once every test has run, each
 * recorded answer is checked against the OpenAPI document its service served. A mismatch fails the run, listed; the recordings are then kept for a look.
 *
 * Test files pass the variable to the services they start (test/helpers/service.ts,
 * `recordingEnv`); the workers inherit it from this process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkRecordedAnswers, formatReport } from './answers-check.js';

export default function setup(): () => void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-answers-'));
  process.env.CONSOLE_RECORD_ANSWERS_DIR = dir;
  return () => {
    const report = checkRecordedAnswers(dir);
    if (report.mismatches.length > 0) {
      // Vitest only logs an error thrown here: the exit code says the run failed.
      process.exitCode = 1;
      process.stderr.write(`\nFAIL OpenAPI check: ${formatReport(report)}\n(recordings kept in ${dir})\n`);
      return;
    }
    fs.rmSync(dir, { recursive: true, force: true });
    const notes = [
      report.withoutBody > 0 ? `${report.withoutBody} checked without their body (larger than the recorder keeps, or cut off)` : '',
      report.relayed > 0 ? `${report.relayed} relayed from a write upstream left to its own check` : '',
      report.cut > 0 ? `${report.cut} last lines cut short by a killed service ignored` : '',
    ].filter(Boolean);
    process.stdout.write(`OpenAPI check: ${report.answers} answers of ${report.files} services match the documents they were served with${notes.length ? ` (${notes.join('; ')})` : ''}\n`);
  };
}
