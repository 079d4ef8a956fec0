/** The engine CLI's commands as typed (README, "Engine doctor and migrate"); the doctor's is `fixCli` in src/engine/errors.ts. */

/** The command that converts legacy project `id` to format 2. */
export function migrateCommand(id: string): string {
  return `npm run engine -- migrate --project ${id}`;
}
