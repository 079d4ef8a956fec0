/** Now as ISO-8601 UTC with milliseconds. */
export const nowIso = (): string => new Date().toISOString();
