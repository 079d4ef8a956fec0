import { exitCodeOf, messageOf } from './errors.js';
import { appendReceipt, type Outcome } from './append-receipt.js';
import { loadProject, type ProjectRef } from './load-project.js';
import { loadTarget } from './load-target.js';
import { DEFAULT_MODEL, parseDispatchArgs } from './parse-args.js';
import { renderTestPattern } from './render-take.js';
import { formatTakeId } from './take-ids.js';
import { findNextTakeNumber, releaseReservation, reserveTakeId, writeMedia, writeTakeFile, type NewTake, type Reservation } from './write-take.js';

/** Where a run's lines go; each call is one line without its newline. */
export interface DispatchIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface DispatchOptions {
  /** The tool's arguments (`process.argv.slice(2)`); also recorded in the receipt. */
  argv: readonly string[];
  /** Absolute. */
  storeRoot: string;
  io: DispatchIo;
  now?: () => Date;
}

/**
 * Runs the dispatch tool once (engine-format.md §The dispatch tool); never throws. Exit 0 for `rendered`, `planned`,
 * `nothing_to_do`, 2 for caller mistakes, else 1. A run that reached a valid format-2 project appends a receipt, failed or not.
 */
export async function runDispatch(options: DispatchOptions): Promise<number> {
  const { io } = options;
  const now = options.now ?? (() => new Date());
  // `project` stays null (and no receipt is written) until a valid format-2 project is known.
  const run: RunState = { project: null, shot: null, dryRun: false, receiptTried: false };
  const receipt = async (outcome: Outcome, takeId: string | null): Promise<void> => {
    if (run.project === null) return;
    run.receiptTried = true;
    await appendReceipt(run.project.dir, {
      time: now().toISOString(),
      argv: [...options.argv],
      project: run.project.id,
      shot: run.shot,
      model: DEFAULT_MODEL,
      dry_run: run.dryRun,
      outcome,
      take_id: takeId,
    });
  };
  try {
    const args = parseDispatchArgs(options.argv);
    run.dryRun = args.dryRun;
    run.shot = args.shot;
    const project = await loadProject(options.storeRoot, args.project);
    run.project = project;

    const target = await loadTarget(project, args.shot, (message) => io.err(`warning: ${message}`));
    if (target.kind === 'nothing_to_do') {
      io.out('nothing to render: every shot has a take');
      await receipt('nothing_to_do', null);
      io.out('done');
      return 0;
    }
    const shotId = target.shot.shot_id;
    run.shot = shotId;
    if (args.model !== null && args.model !== DEFAULT_MODEL) {
      // One backend exists locally: render anyway so the request yields a take (which records the model used), and warn.
      io.err(`warning: model ${args.model} is not available locally; rendering with the ${DEFAULT_MODEL} backend`);
    }
    const parentId = target.parent?.take_id ?? null;
    io.out(`plan: project=${project.id} shot=${shotId} model=${DEFAULT_MODEL} parent=${parentId ?? 'none'} dry_run=${args.dryRun}`);
    if (args.dryRun) {
      io.out(`dry run: next take would be ${formatTakeId(await findNextTakeNumber(project.dir))}; nothing written`);
      await receipt('planned', null);
      io.out('done');
      return 0;
    }

    const reservation = await reserveTakeId(project.dir);
    io.out(`take: reserved ${reservation.takeId}`);
    const bytes = await renderAndWrite(
      project.dir,
      reservation,
      {
        take_id: reservation.takeId,
        shot_id: shotId,
        parent_take_id: parentId,
        model: DEFAULT_MODEL,
        // Whole seconds, like the rest of the store; the receipt keeps the milliseconds.
        created_at: now()
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z'),
        media: reservation.media,
      },
      io,
    );
    io.out(`wrote take ${reservation.takeId} (${reservation.media}, ${bytes} bytes)`);
    await receipt('rendered', reservation.takeId);
    io.out('done');
    return 0;
  } catch (error) {
    io.err(`error: ${messageOf(error)}`);
    // One receipt per run: when appending the success receipt is what failed, do not try again.
    if (!run.receiptTried) {
      await receipt('failed', null).catch((receiptError: unknown) => {
        io.err(`error: could not write the receipt: ${messageOf(receiptError)}`);
      });
    }
    return exitCodeOf(error);
  }
}

interface RunState {
  project: ProjectRef | null;
  shot: string | null;
  dryRun: boolean;
  receiptTried: boolean;
}

/** Renders into the reservation and writes the take file; returns the media size in bytes. */
async function renderAndWrite(projectDir: string, reservation: Reservation, take: NewTake, io: DispatchIo): Promise<number> {
  try {
    const onProgress = (percent: number): void => io.out(`render: ${percent}%`);
    const png = renderTestPattern(reservation.takeId, reservation.takeNumber, onProgress);
    await writeMedia(reservation, png);
    await writeTakeFile(projectDir, take);
    return png.length;
  } catch (error) {
    // Free the id: a media file with no take would otherwise hold it for ever.
    await releaseReservation(projectDir, reservation);
    throw error;
  }
}
