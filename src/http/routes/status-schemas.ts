/**
 * Zod schemas of the system status's figures of the jobs (`jobs.*`: their priority, the output's backpressure,
 * the spawn helper, the job I/O thread), of the replays' shared blocks (`bus.replay.cache`) and of the state
 * database (`database`).
 */
import { z } from 'zod';

/** `jobs.priority` of the system status (supervisor/job-priority.ts). */
export const PriorityStats = z
  .object({ nice: z.number().int(), lowered: z.number().int(), refused: z.number().int() })
  .meta({ description: 'CONSOLE_JOB_NICE, and the jobs whose CPU priority (and autogroup’s) was lowered below the service’s, or could not be.' });

/** `jobs.backpressure` of the system status (supervisor/output-gate.ts OutputGateStats). */
export const BackpressureStats = z.object({ backlogMax: z.number().int(), paused: z.boolean(), pauses: z.number().int(), pausedMs: z.number().int() }).meta({
  description: 'Backpressure on the jobs’ output: their pipes are not read while the bus holds CONSOLE_EVENT_BACKLOG_MAX events it has not stored; how often and how long since start-up.',
});

/** `jobs.spawner` of the system status (process/spawn-helper.ts SpawnHelperStats). */
export const SpawnerStats = z
  .object({
    pid: z.number().int().nullable(),
    spawned: z.number().int(),
    refused: z.number().int(),
    running: z.number().int(),
    sessions: z.enum(['shared', 'one per job']).nullable(),
  })
  .meta({
    description:
      'The spawn helper process that forks every job (the service itself never forks one): its pid (null once it is gone, which stops the service), the jobs it started and the spawns refused since start-up, the jobs it started that have not exited yet, and how the jobs are grouped for the CPU scheduler: `shared`, every job in the helper’s session, each leading a process group of its own, so that all jobs together are one autogroup (at CONSOLE_JOB_NICE) beside the service’s, however many run; `one per job`, each job leading a session (and autogroup) of its own, when perl (which starts each job in its own process group) is not installed; null before the helper is ready.',
  });

/** `jobs.thread` of the system status (supervisor/job-io.ts JobIoThreadStats). */
export const JobIoThreadStats = z
  .object({
    tid: z.number().int().nullable(),
    nice: z.number().int().nullable(),
    lines: z.number().int(),
    batches: z.number().int(),
    queued: z.number().int(),
    youngGenerationMb: z.number().int().nullable(),
  })
  .meta({
    description:
      'The job I/O thread, which orders every spawn from the spawn helper and reads and frames every job’s stdout and stderr (the main thread never reads a job’s pipe): its kernel thread id (Linux; null elsewhere), its nice value (CONSOLE_JOB_THREAD_NICE, below the main thread’s, so the main thread goes first when the two compete for a CPU; null where unknown), the lines it handed to the main thread since start-up and the batches they came in (a batch holds at most 512 lines and waits at most 2 ms for more), the lines handed over and not yet published (at most 2,048: past that it stops reading the pipes), and the bound on its young generation in MB (CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB, or V8’s default when that is 0; null once the thread ended).',
  });

/** `bus.replay.cache` of the system status (bus/replay-cache.ts ReplayCacheStats). */
export const ReplayCacheStats = z
  .object({
    maxBytes: z.number().int(),
    bytes: z.number().int(),
    blocks: z.number().int(),
    blocksRead: z.number().int(),
    pagesShared: z.number().int(),
    threadReads: z.number().int(),
    threadFailures: z.number().int(),
  })
  .meta({
    description:
      'Unfiltered replays read the database in blocks of 500 ids, kept for the other streams replaying the same stretch (CONSOLE_SSE_REPLAY_CACHE_BYTES): their bytes and number, the blocks read, and the pages served wholly from blocks read before. With the embedded SQLite database, unfiltered replay reads are made on the replay thread, which hands each block’s frames to the main thread as bytes: `threadReads` counts them, `threadFailures` the reads it could not make (a segment dropped by retention meanwhile, the thread’s death), which were made on the main thread instead and logged. Both stay 0 in cluster mode, whose reads are PostgreSQL’s.',
  });

/** `reachable`, and while it is false what the status waits for. */
const Reachable = {
  reachable: z.boolean(),
  error: z.string().optional(),
  heldEvents: z.number().int().optional(),
};

/** What both back ends' event-storing threads report (`database.eventWriter`): thread id, nice, appends, rows, young generation. */
const EventStorerFigures = {
  tid: z.number().int().nullable(),
  nice: z.number().int().nullable(),
  appends: z.number().int(),
  rows: z.number().int(),
  youngGenerationMb: z.number().nullable(),
};

/** `database` of the system status (the back end's status: main/sqlite-backend.ts, main/postgres-backend.ts). */
export const DatabaseStatus = z
  .union([
    z.object({
      backend: z.literal('sqlite'),
      file: z.string(),
      binding: z.string(),
      checkpointFailures: z.number().int(),
      replayThread: z.object({ tid: z.number().int().nullable(), nice: z.number().int().nullable() }),
      eventWriter: z
        .object({
          ...EventStorerFigures,
          waits: z.number().int(),
          waitedMs: z.number().int(),
          idleWaits: z.number().int(),
          idleWaitedMs: z.number().int(),
        })
        .meta({
          description:
            "The event writer thread: it stores the queued events (jobs' lines the most) on a connection of its own, one append at a time, so the SQLite inserts leave the main thread. `tid` and `nice` are its kernel thread id and nice value (CONSOLE_EVENT_WRITER_THREAD_NICE), null where unknown; `appends` and `rows` count what it stored since start-up; `idleWaits` and `idleWaitedMs` how often, and how long in all (ms), a write on the main thread's connection (a console write or transaction, a job record, an event stored before its answer: `POST /api/internal/bus`, a slash command) waited for its append without blocking the main thread (no append starts meanwhile); `waits` and `waitedMs` how often, and how long, the main thread waited for it blocking (0: shutdown waits without blocking too; left for a flush that finds an append under way, as after the thread's death); `youngGenerationMb` its young generation's bound in force (8 MB: each append's rows live milliseconds), null once it ended.",
        }),
      ...Reachable,
    }),
    z.object({
      backend: z.literal('postgres'),
      url: z.string(),
      listening: z.boolean(),
      sessionBounds: z.object({ lockTimeoutMs: z.number().int(), idleInTransactionTimeoutMs: z.number().int(), statementTimeoutMs: z.number().int() }).meta({
        description:
          'What every pooled session sets, from CONSOLE_INSTANCE_TIMEOUT_MS: `lock_timeout` and `idle_in_transaction_session_timeout` half of it, at least 1 s (a frozen peer holding a lock costs the others at most that), `statement_timeout` three times it, at least 30 s (a runaway statement).',
      }),
      eventWriter: z.object(EventStorerFigures).meta({
        description:
          "The event append thread: the bus's appends (`console_append` of each batch of queued events, jobs' lines the most, and retention) run there on a connection of its own (`application_name` `console-backend event appends`), so their parameters, round trips and results leave the main thread; a job's line crosses as its JSON made on the job I/O thread, and the stored events' Server-Sent Events frames are made there and handed back with their ids. The appends run there in the order sent (the next sent while one runs); one sent before a failed one is not run, and its events are held and stored after the failed one's. `tid` and `nice` are its kernel thread id and nice value (CONSOLE_EVENT_APPEND_THREAD_NICE, 0 by default: the main thread's), null where unknown; `appends` and `rows` count the appends sent there since start-up (failed ones included) and their events; `youngGenerationMb` its young generation's bound in force (V8's default, 48 MB on 64-bit: a batch's columns outlived a smaller one's scavenges), null once it ended. Its death, or a ping left unanswered past CONSOLE_THREAD_ANSWER_LIMIT_MS, stops the service (exit 1).",
      }),
      ...Reachable,
    }),
  ])
  .meta({
    description:
      'The state database: the embedded SQLite file, the SQLite binding this Node.js loads (`better-sqlite3 12.x` on Node.js 20, `better-sqlite3 13.x` on 22 and newer) and its failed WAL checkpoints, the replay thread (stream replays’ reads run there): its kernel thread id (Linux) and nice value (CONSOLE_SSE_REPLAY_THREAD_NICE, below the main thread’s; null where unknown), or (cluster mode, CONSOLE_DATABASE_URL) the PostgreSQL URL without its password and whether this instance listens for the others’ notifications. While it cannot be read (`reachable` false), `error` says why and `heldEvents` how many events wait to be stored; jobs, fallbacks, instances and terminals then show this instance’s own, from memory.',
  });

/** `memory` of the system status (service.ts memoryOf): the RSS and main heap now, the allocator, and its variables as started with. */
export const MemoryStatus = z
  .object({
    rssBytes: z.number().int().meta({ description: 'Resident set size of the process now, bytes.' }),
    heapUsedBytes: z.number().int().meta({ description: 'The main thread’s JavaScript heap in use now, bytes.' }),
    allocator: z.enum(['jemalloc', 'libc']).meta({
      description:
        'The allocator the process runs with: `jemalloc` when libjemalloc is preloaded (`npm start` and the systemd unit preload it when installed: Debian’s libjemalloc2), `libc` otherwise (glibc’s malloc on Linux).',
    }),
    mallocArenaMax: z.string().nullable().meta({
      description:
        'MALLOC_ARENA_MAX as the process was started with: glibc’s bound on its malloc arenas, which `npm start` and the systemd unit set to 2 (each thread that allocates otherwise gets an arena of its own, kept in the RSS after a storm). Null when unset; without effect under jemalloc.',
    }),
    mallocConf: z.string().nullable().meta({
      description:
        'MALLOC_CONF as the process was started with: jemalloc’s options, which `npm start` and the systemd unit set to `background_thread:true,dirty_decay_ms:10000,muzzy_decay_ms:0` (freed memory handed back to the system within ten seconds, by a thread of jemalloc’s own). Null when unset; without effect under glibc.',
    }),
  })
  .meta({ description: 'The process’s memory now, and how its C library was told to allocate it.' });
