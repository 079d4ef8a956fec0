/**
 * The engine CLI's commands as a person types them (README, "Engine doctor and migrate").
 * The doctor's fix command is `fixCli` in src/engine/errors.ts, shared with the service's 422s.
 */

/** The command that converts legacy project `id` to format 2. */
export function migrateCommand(id: string): string {
  return `npm run engine -- migrate --project ${id}`;
}
