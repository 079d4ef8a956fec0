/**
 * Store files that are not what they seem, planted for real: named
 * pipes (mkfifo), Unix sockets, a device node (mknod, a copy of /dev/null), folders where a
 * file is expected, symbolic links out of the store (to /etc/passwd, to the state database,
 * to another project through `..`), link loops, JSON nested 100,000 levels deep, files past
 * the byte bound, and text that is not JSON with a sentinel that must never be quoted.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** Text that must appear in no answer and no event: it is only ever inside a store file. */
export const SENTINEL = 'SENTINEL-7f3a-never-quote-me';

/** Bytes over which a store file is refused in these tests (CONSOLE_STORE_FILE_MAX_BYTES). */
export const TEST_MAX_BYTES = 1024 * 1024;

/** Where a planted file stands: which file of which entity, and what "another project's file" is from there. */
export interface PlantSite {
  /** Absolute path of the file to plant. */
  readonly file: string;
  /** A valid document of this kind of file (the big file pads it). */
  readonly doc: Record<string, unknown>;
  /** A relative link target reaching a file of another project (or of the projects, from memory/) through `..`. */
  readonly otherTarget: string;
  /** The state folder of the service (a link target; it must exist). */
  readonly stateDir: string;
}

export interface HostileKind {
  readonly name: string;
  /** `file`: unusable as a file (422 even where only the presence counts); `content`: read, not usable JSON. */
  readonly level: 'file' | 'content';
  /** What the 422's remediation says (besides the store-relative file). */
  readonly why: RegExp;
  /** Whether this kind can stand as a media file (regular files are served whatever they hold). */
  readonly media: boolean;
  plant(site: PlantSite): void | Promise<void>;
}

const sockets: net.Server[] = [];

/** Closes the Unix sockets planted so far. */
export async function closeSockets(): Promise<void> {
  await Promise.all(sockets.splice(0).map((s) => new Promise((r) => s.close(r))));
}

function canMknod(): boolean {
  const probe = path.join(fs.mkdtempSync('/tmp/mknod-probe-'), 'null');
  try {
    execFileSync('mknod', [probe, 'c', '1', '3'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(path.dirname(probe), { recursive: true, force: true });
  }
}

/** Whether device nodes can be made here (root with CAP_MKNOD); the device kind says so when it cannot. */
export const MKNOD = canMknod();

const deepText = (doc: Record<string, unknown>, depth: number) => `${JSON.stringify(doc).slice(0, -1)},"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;

export const HOSTILE_KINDS: readonly HostileKind[] = [
  {
    name: 'fifo',
    level: 'file',
    why: /cannot be read \(not a regular file \(a named pipe\)\)/,
    media: true,
    plant: ({ file }) => {
      execFileSync('mkfifo', [file]);
    },
  },
  {
    name: 'socket',
    level: 'file',
    why: /cannot be read \(not a regular file \(a socket\)\)/,
    media: true,
    plant: ({ file }) =>
      new Promise<void>((resolve, reject) => {
        const server = net.createServer();
        server.once('error', reject);
        server.listen(file, () => resolve());
        sockets.push(server);
      }),
  },
  ...(MKNOD
    ? [
        {
          name: 'device',
          level: 'file' as const,
          why: /cannot be read \(not a regular file \(a character device\)\)/,
          media: true,
          plant: ({ file }: PlantSite) => {
            execFileSync('mknod', [file, 'c', '1', '3']);
          },
        },
      ]
    : []),
  {
    name: 'folder',
    level: 'file',
    why: /cannot be read \(not a regular file \(a folder\)\)/,
    media: true,
    plant: ({ file }) => fs.mkdirSync(file),
  },
  {
    name: 'etc',
    level: 'file',
    why: /cannot be read \(a symbolic link leading outside (projects\/[\w-]+|memory)\)/,
    media: true,
    plant: ({ file }) => fs.symlinkSync('/etc/passwd', file),
  },
  {
    name: 'state',
    level: 'file',
    why: /cannot be read \(a symbolic link leading outside (projects\/[\w-]+|memory)\)/,
    media: true,
    // The state folder itself (it exists before the service starts; its database may not yet).
    plant: ({ file, stateDir }) => fs.symlinkSync(stateDir, file),
  },
  {
    name: 'other',
    level: 'file',
    why: /cannot be read \(a symbolic link leading outside (projects\/[\w-]+|memory)\)/,
    media: true,
    plant: ({ file, otherTarget }) => fs.symlinkSync(otherTarget, file),
  },
  {
    name: 'loop',
    level: 'file',
    why: /cannot be read \(a symbolic link loop/,
    media: true,
    plant: ({ file }) => fs.symlinkSync(path.basename(file), file),
  },
  {
    name: 'big',
    level: 'file',
    why: new RegExp(`cannot be read \\(larger than ${TEST_MAX_BYTES} bytes, CONSOLE_STORE_FILE_MAX_BYTES\\)`),
    media: false,
    plant: ({ file, doc }) => fs.writeFileSync(file, JSON.stringify({ ...doc, padding: 'x'.repeat(TEST_MAX_BYTES) })),
  },
  {
    name: 'deep',
    level: 'content',
    why: /cannot be read \(nested deeper than 64 levels at line 1 column \d+, CONSOLE_STORE_JSON_MAX_DEPTH\)/,
    media: false,
    plant: ({ file, doc }) => fs.writeFileSync(file, deepText(doc, 100_000)),
  },
  {
    name: 'text',
    level: 'content',
    why: /cannot be read \(invalid JSON at line 3 column 5: invalid symbol\)/,
    media: false,
    plant: ({ file }) => fs.writeFileSync(file, `\n\n    hello ${SENTINEL} secret\n`),
  },
];

/** Removes whatever stands at `file` (a file, a link, a pipe, a socket, a folder). */
export function removeAt(file: string): void {
  fs.rmSync(file, { recursive: true, force: true });
}

/** Everything of `text` that must not leave the service: the sentinel, /etc/passwd, SQLite's header, absolute paths of the temp folder. */
export function leaks(text: string, tmp: string): string[] {
  const found: string[] = [];
  for (const bad of [SENTINEL, 'root:x:0:0', 'SQLite format 3', '/etc/passwd', tmp, 'is not valid JSON', 'Unexpected token']) {
    if (text.includes(bad)) found.push(bad);
  }
  return found;
}
