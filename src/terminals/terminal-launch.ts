/** The terminal program's argument list (no shell), and how it is shown without the password. */
import { randomBytes } from 'node:crypto';

const CREDENTIAL_USER = 'console';

const REDACTED_PASSWORD = '[REDACTED]';

/** A new random credential `console:<24 characters>`. */
export function newCredential(): string {
  return `${CREDENTIAL_USER}:${randomBytes(18).toString('base64url')}`;
}

/** The program's arguments for a terminal on `port`. */
export function terminalArgs(port: number, iface: string | null, credential: string | null, command: readonly string[]): string[] {
  return [
    '--port',
    String(port),
    ...(iface !== null ? ['--interface', iface] : []),
    ...(credential !== null ? ['--credential', credential] : []),
    '--writable',
    // Websocket connections only from ttyd's own page: another site cannot drive the shell.
    '--check-origin',
    ...command,
  ];
}

/** The argument list as reported (status, events): the credential's password replaced. */
export function shownArgv(program: string, args: readonly string[], credential: string | null): string[] {
  return [program, ...args.map((a) => (a === credential ? `${CREDENTIAL_USER}:${REDACTED_PASSWORD}` : a))];
}

/** The `--interface` for a listen address: null (all interfaces) for wildcards. */
export function interfaceFor(host: string): string | null {
  const h = host.replace(/^\[|\]$/g, '');
  if (h === '' || h === '0.0.0.0' || h === '::') return null;
  return h === 'localhost' ? '127.0.0.1' : h;
}

/** A terminal's URL at `host`. */
export function urlOf(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}/`;
}
