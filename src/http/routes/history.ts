/**
 * `GET /api/system-status/history`: the last 15 minutes of the service's figures (a sample
 * every CONSOLE_HISTORY_SAMPLE_MS), for the ops page's charts. In cluster mode the answering
 * instance adds every other live instance's history, read from the instance itself
 * (peer-history.ts), each labelled with its id.
 */
import { z } from 'zod';
import { HISTORY_FIGURES } from '../../metrics/history-figures.js';
import { readPeerHistories, PEER_TIMEOUT_MS, type InstanceHistory } from '../peer-history.js';
import type { Api } from '../route.js';
import type { AppDeps } from './deps.js';

/** The route, also what a peer is asked for. */
export const HISTORY_ROUTE = '/api/system-status/history';

const FIGURE_NAMES = HISTORY_FIGURES.map((f) => f.name) as [string, ...string[]];

const Series = z
  .object(Object.fromEntries(HISTORY_FIGURES.map((f) => [f.name, z.array(z.number().nullable()).meta({ description: `${f.label}, in ${f.unit}: ${f.description}` })])))
  .meta({ description: 'One array per figure, as long as `times`: the value at each sample; null where there was nothing to measure (no read answered, the first interval).' });

const InstanceHistorySchema = z
  .object({
    id: z.string().nullable().meta({ description: 'The instance (CONSOLE_INSTANCE_ID); null on the embedded database’s one instance.' }),
    self: z.boolean().meta({ description: 'Whether this is the instance that answered.' }),
    reachable: z
      .boolean()
      .meta({ description: 'False when another instance’s history could not be read (no answer within the timeout, an error answer): `error` says why, and the arrays are empty.' }),
    error: z.string().nullable(),
    times: z.array(z.number()).meta({ description: 'When each sample was taken, in milliseconds since the Unix epoch (UTC), oldest first.' }),
    series: Series,
  })
  .meta({ id: 'InstanceHistory' });

const HistorySchema = z
  .object({
    intervalSeconds: z.number().meta({ description: 'Time between two samples (CONSOLE_HISTORY_SAMPLE_MS), seconds.' }),
    windowSeconds: z.number().meta({ description: 'How far back samples are kept: 900 (15 minutes).' }),
    figures: z
      .array(
        z.object({
          name: z.enum(FIGURE_NAMES),
          label: z.string(),
          unit: z.string().meta({ description: '`jobs`, `lines/s`, `events/s`, `clients`, `pauses`, `seconds`, `bytes`, `ratio` (0..1), `pages` or `events`.' }),
          description: z.string(),
          prometheus: z.string().meta({ description: 'The Prometheus family the same figure comes from (`GET /api/metrics`; the Grafana dashboard of deploy/grafana).' }),
        }),
      )
      .meta({ description: 'What each series is, in the order the ops page draws them.' }),
    instances: z.array(InstanceHistorySchema).meta({ description: 'This instance’s history first, then (cluster mode, `scope=cluster`) every other live instance’s, by id.' }),
  })
  .meta({ id: 'SystemStatusHistory' });

const HistoryQuery = z.object({
  scope: z
    .enum(['cluster', 'instance'])
    .default('cluster')
    .meta({ description: '`cluster` (default): in cluster mode, every live instance’s history; `instance`: this instance’s only (what an instance asks the others for).' }),
  since: z
    .string()
    .regex(/^\d{1,15}$/, 'must be a time in milliseconds since the Unix epoch (decimal digits)')
    .transform(Number)
    .optional()
    .meta({ description: 'Only samples taken after this time (milliseconds since the Unix epoch): a client that has the older ones asks for the new ones.' }),
});

export function historyRoutes(api: Api, { history, membership, config }: AppDeps): void {
  api.route({
    method: 'get',
    path: HISTORY_ROUTE,
    operationId: 'systemStatusHistory',
    summary: 'The last 15 minutes of the service’s figures',
    description: `A sample every CONSOLE_HISTORY_SAMPLE_MS (5 s by default), kept in memory for 15 minutes (bounded; a restarted instance starts empty): running jobs, job output lines/s, events stored/s and delivered/s, stream clients, slow clients dropped and output pauses per interval, event-loop delay p99, read latency p50 and p99, resident memory and heap, worker pool utilisation, replays from the database and fallbacks raised. In cluster mode (\`scope=cluster\`) the answering instance reads every other live instance’s history at the address it recorded (the instances of \`GET /api/system-status\`) with this instance’s token, waiting at most ${PEER_TIMEOUT_MS} ms for each: one that does not answer is listed unreachable, with the reason.`,
    tag: 'Service',
    query: HistoryQuery,
    answers: { 200: { description: 'The histories.', schema: HistorySchema } },
    handler: async ({ res, query }) => {
      const own: InstanceHistory = { id: membership?.id ?? null, self: true, reachable: true, error: null, ...history.snapshot(query.since) };
      let others: InstanceHistory[] = [];
      if (membership && query.scope === 'cluster') {
        let peers: { id: string; address: string }[] = [];
        try {
          peers = (await membership.list()).filter((i) => i.alive && i.id !== membership.id);
        } catch {
          // The database away: the instances cannot be listed; this one's history still answers.
        }
        others = await readPeerHistories(peers, config.apiToken, query.since);
      }
      res.set('Cache-Control', 'no-store').json({
        intervalSeconds: history.intervalMs / 1000,
        windowSeconds: history.windowMs / 1000,
        figures: HISTORY_FIGURES,
        instances: [own, ...others],
      });
    },
  });
}
