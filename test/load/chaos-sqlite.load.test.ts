/**
 * The fault-injection run of one instance on the embedded SQLite database (test/chaos/harness.ts,
 * systems.ts), short: CHAOS_SECONDS (default 60) under faults with seed CHAOS_SEED (default: a new
 * one, printed). The instance itself is SIGKILLed and started again, paused past the clients'
 * request timeout, and its state database's disk fills and empties, under the mixed workload;
 * every invariant of the cluster run is checked. `npm run chaos -- --backend sqlite --seconds 600
 * --seed 7` runs it long (test/chaos/run.mjs). CHAOS_REPORT names a file the report is written to.
 */
import { chaosLoadTest } from '../chaos/load-test.js';

chaosLoadTest('sqlite', 'one SQLite instance under kills, pauses and a full disk holds every invariant');
