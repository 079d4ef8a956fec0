import { readFile } from 'node:fs/promises';

/** A parsed JSON object; arrays and scalars are rejected. */
export type JsonObject = Record<string, unknown>;

/** Reads a file holding one JSON object. @throws the fs error (with `code`); an Error for invalid JSON or a non-object. */
export async function readJsonObject(file: string): Promise<JsonObject> {
  const text = await readFile(file, 'utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: invalid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${file}: not a JSON object`);
  }
  return value as JsonObject;
}

/** True for the errors thrown when a path does not exist. */
export function isNotFound(error: unknown): boolean {
  // ENOTDIR: a path component is a file, e.g. `projects/<id>` is not a directory.
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
