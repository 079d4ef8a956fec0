/**
 * The fault-injection run of cluster mode (test/chaos/harness.ts), short: CHAOS_SECONDS
 * (default 60) under faults with seed CHAOS_SEED (default: a new one, printed). `npm run chaos --
 * --seconds 600 --seed 7` runs it long (test/chaos/run.mjs); its figures go in docs/RELIABILITY.md.
 * CHAOS_REPORT names a file the report is written to as JSON.
 */
import { chaosLoadTest } from '../chaos/load-test.js';

chaosLoadTest('cluster', 'cluster mode under kills, pauses and database stops holds every invariant');
