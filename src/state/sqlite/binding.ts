// The SQLite binding for this runtime: better-sqlite3's API in two builds, as no release runs on every Node.js
// we support. Node.js 20 loads better-sqlite3 12 (13 segfaults there); 22 and newer load 13, prebuilt (12 aborts
// on Node.js 24 when the collector finalises a statement). 12 is optional: a missing build on 20 is reported here.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** The package this runtime loads: `better-sqlite3` (12) on Node.js 20, `better-sqlite3-13` on 22 and newer. */
export const SQLITE_PACKAGE: string = NODE_MAJOR >= 22 ? 'better-sqlite3-13' : 'better-sqlite3';

const require = createRequire(import.meta.url);

function load(): typeof BetterSqlite3 {
  try {
    return require(SQLITE_PACKAGE) as typeof BetterSqlite3;
  } catch (err) {
    const hint = SQLITE_PACKAGE === 'better-sqlite3' ? 'on Node.js 20 it is built from source at install: install python3, make and g++, then run `npm ci` again' : 'run `npm ci` with this Node.js';
    throw new Error(`the SQLite binding ${SQLITE_PACKAGE} cannot be loaded on Node.js ${process.version}: ${hint} (${(err as Error).message})`, {
      cause: err,
    });
  }
}

/** better-sqlite3's `Database` class, from the build this runtime loads. */
const Database: typeof BetterSqlite3 = load();
export default Database;

/** The binding and its version, `better-sqlite3 <version>` (reported in the system status). */
export const SQLITE_BINDING: string = `better-sqlite3 ${(require(`${SQLITE_PACKAGE}/package.json`) as { version: string }).version}`;

export type Db = BetterSqlite3.Database;
// biome-ignore lint/complexity/noBannedTypes: the constraint of better-sqlite3's own Statement type, which this names.
export type Statement<P extends unknown[] | {} = unknown[], R = unknown> = BetterSqlite3.Statement<P, R>;
