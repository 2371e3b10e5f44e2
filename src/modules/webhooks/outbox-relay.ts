import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { EVENTS_NOTIFY_CHANNEL } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { endpointReceives } from '../events/event-catalog.ts';
import { startDeliveryWorkflow } from './delivery-starter.ts';
import { DEFAULT_ATTEMPT_TIMEOUT_MS } from './webhook-http.ts';

/**
 * The webhook outbox relay (runs in every worker process). Events are written to `events` in
 * the transaction of the change that caused them; the relay turns each into one delivery per
 * endpoint subscribed when it claims it, and starts a deliverWebhook workflow per delivery.
 *
 * One pass, per batch of the oldest unfanned events:
 *   1. claim them: `select … where fanned_out_at is null order by created_at, id
 *      for update skip locked` in a transaction that holds the rows until step 4 (other relays
 *      skip them, so several worker processes share the work);
 *   2. insert the deliveries on another connection, committed at once
 *      (`on conflict (webhook_id, event_id) do nothing`), so a workflow never starts before
 *      its row is visible and a repeated pass creates nothing twice;
 *   3. start every queued delivery's workflow (deterministic id, USE_EXISTING);
 *   4. set fanned_out_at and commit.
 * A crash or a Temporal outage anywhere before 4 rolls the claim back: the next pass redoes
 * 2–3 idempotently. Nothing is lost, nothing is started twice.
 *
 * Wake-ups: LISTEN on `herald_events` (an insert trigger notifies at commit), so a delivery
 * starts within milliseconds of the commit; a poll every 2 s covers lost notifications and a
 * dropped listener connection (re-established with backoff).
 *
 * Reconciler (every 30 s): restarts the series of deliveries whose workflow may be missing,
 * with the same start (USE_EXISTING: a running workflow is joined and left be; a missing or
 * closed one, e.g. terminated by an operator or lost with the Temporal server's state, is
 * started afresh). It finds, a margin (default 1 min) past the point where the workflow should
 * have moved them on:
 *   - `queued` rows untouched for the margin (a replay whose start failed, a start lost in a crash);
 *   - `failed` rows whose `next_attempt_at` passed more than the margin ago (the retry timer's
 *     workflow is gone);
 *   - `delivering` rows untouched for the attempt timeout (15 s) plus the margin (the attempt's
 *     worker and workflow are gone).
 * A restarted run continues the series from its record: deliverWebhook begins at attempt 1, and
 * the engine answers every recorded attempt from the database without sending (the latest
 * one's remaining retry delay, if any, is waited); an attempt left `delivering` is recorded as
 * abandoned and the next attempt made (delivery-engine.ts). Passes walk the candidates in
 * (updated_at, id) order from where the previous pass stopped, so rows whose running workflow
 * is merely late (a busy endpoint) cannot crowd out the rest.
 */

export interface OutboxRelayOptions {
  orm: MikroORM;
  databaseUrl: string;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  pollIntervalMs?: number;
  batchSize?: number;
  reconcileIntervalMs?: number;
  /**
   * The reconciler's margin (default 60 s): how long a delivery may stay queued, stay past its
   * `next_attempt_at` as `failed`, or stay `delivering` beyond the attempt timeout, before the
   * reconciler (re)starts its series.
   */
  reconcileAfterMs?: number;
  /** The longest an attempt can be in flight (default: the HTTP deadline, 15 s). */
  attemptTimeoutMs?: number;
  /** Deliveries (re)started per reconciler pass at most (default 500). */
  reconcileBatchSize?: number;
  /** A workflow start gives up on an unresponsive Temporal after this long (default 10 s), failing the pass. */
  startDeadlineMs?: number;
  /**
   * Ask Temporal to hand each new run's first task straight to this process's worker (eager
   * start; `temporal` must then be a client on the worker's NativeConnection).
   */
  eagerStart?: boolean;
}

export interface OutboxRelay {
  /** Runs passes until no unfanned event is left (or one fails); resolves with the events fanned out. */
  drain(): Promise<number>;
  /** One reconciler pass; resolves with the workflows (re)started. */
  reconcile(): Promise<number>;
  stop(): Promise<void>;
}

/** An endpoint of the event's workspace that existed and was enabled when the event was written. */
interface Candidate {
  event_id: string;
  org_id: string;
  type: string;
  webhook_id: string;
  events: string[];
}

interface QueuedDelivery {
  id: string;
  org_id: string;
  replay_count: number;
}

/** A reconciler candidate with its place in the (updated_at, id) walk. */
interface StaleDelivery extends QueuedDelivery {
  status: 'queued' | 'failed' | 'delivering';
  /** updated_at as text with microseconds (exact for the keyset comparison). */
  updated_key: string;
}

const START_CONCURRENCY = 32;
const LISTEN_RETRY_MS = [1_000, 2_000, 5_000, 10_000];
const FAILURE_LOG_EVERY_MS = 30_000;

/** Runs `work` over `items`, `limit` at a time; after a failure starts nothing new and rejects with it. */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let firstError: unknown;
  const lane = async () => {
    while (next < items.length && firstError === undefined) {
      const item = items[next]!;
      next += 1;
      try {
        await work(item);
      } catch (error) {
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (firstError !== undefined) throw firstError instanceof Error ? firstError : new Error('start failed', { cause: firstError });
}

/** Starts the relay: it listens, polls and reconciles until `stop()`. */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { orm, temporal, config, logger } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 2_000;
  const batchSize = options.batchSize ?? 100;
  const reconcileIntervalMs = options.reconcileIntervalMs ?? 30_000;
  const reconcileAfterMs = options.reconcileAfterMs ?? 60_000;
  const attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const reconcileBatchSize = options.reconcileBatchSize ?? 500;
  const startDeadlineMs = options.startDeadlineMs ?? 10_000;
  const connection = () => orm.em.getConnection();

  let stopped = false;
  let running: Promise<number> | null = null;
  let again = false;
  let failingSince: number | null = null;
  let lastFailureLog = 0;

  function noteFailure(what: string, error: unknown) {
    const now = Date.now();
    failingSince ??= now;
    if (now - lastFailureLog >= FAILURE_LOG_EVERY_MS) {
      lastFailureLog = now;
      logger.warn(`webhook relay: ${what} failed; retrying`, { error: error instanceof Error ? error.message : String(error) });
    }
  }

  function noteSuccess() {
    if (failingSince === null) return;
    logger.info('webhook relay recovered', { failingForMs: Date.now() - failingSince });
    failingSince = null;
    lastFailureLog = 0;
  }

  const start = (delivery: QueuedDelivery) =>
    startDeliveryWorkflow(temporal, config, { orgId: delivery.org_id, deliveryId: delivery.id, series: delivery.replay_count }, { eager: options.eagerStart ?? false });
  /** Starts every delivery's workflow; an unresponsive Temporal fails the pass (rolled back, retried) within the deadline. */
  const startAll = (deliveries: QueuedDelivery[]) =>
    forEachLimited(deliveries, START_CONCURRENCY, (delivery) =>
      temporal.connection.withDeadline(Date.now() + startDeadlineMs, () => start(delivery)),
    );

  /** One batch (steps 1–4); resolves with the number of events claimed. */
  async function fanOutBatch(): Promise<number> {
    return orm.em.fork().transactional(async (em) => {
      const events = await em.execute<{ id: string }[]>(
        `select id from events
          where fanned_out_at is null
          order by created_at, id
          limit ? for update skip locked`,
        [batchSize],
      );
      if (events.length === 0) return 0;
      const eventIds = events.map((event) => event.id);
      const candidates = await em.execute<Candidate[]>(
        `select e.id as event_id, e.org_id, e.type, w.id as webhook_id, w.events
           from events e
           join webhook_endpoints w on w.org_id = e.org_id and w.enabled and w.created_at <= e.created_at
          where e.id in (?)`,
        [eventIds],
      );
      const rows = candidates
        .filter((candidate) => endpointReceives(candidate.events, candidate.type))
        .map((candidate) => [newId(), candidate.org_id, candidate.webhook_id, candidate.event_id, candidate.type]);
      if (rows.length > 0) {
        await connection().execute(
          `insert into webhook_deliveries
             (id, org_id, webhook_id, event_id, event_type, status, attempt_count, replay_count, next_attempt_at, created_at, updated_at)
           values ${rows.map(() => `(?, ?, ?, ?, ?, 'queued', 0, 0, now(), now(), now())`).join(', ')}
           on conflict (webhook_id, event_id) do nothing`,
          rows.flat(),
          'run',
        );
        const queued = await connection().execute<QueuedDelivery[]>(
          `select id, org_id, replay_count from webhook_deliveries where event_id in (?) and status = 'queued'`,
          [eventIds],
        );
        await startAll(queued);
      }
      await em.execute(`update events set fanned_out_at = now() where id in (?)`, [eventIds], 'run');
      return events.length;
    });
  }

  async function drainLoop(): Promise<number> {
    let total = 0;
    try {
      do {
        again = false;
        for (;;) {
          if (stopped) return total;
          const claimed = await fanOutBatch();
          total += claimed;
          if (claimed < batchSize) break;
        }
      } while (again);
      noteSuccess();
    } catch (error) {
      noteFailure('fan-out', error);
    }
    return total;
  }

  function drain(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = drainLoop().finally(() => {
      running = null;
    });
    return running;
  }

  /** Where the previous reconciler pass stopped; null starts from the oldest row. */
  let reconcileCursor: { updatedKey: string; id: string } | null = null;

  /** The next page of deliveries that should have moved on by now (see the module comment). */
  function findStale(after: { updatedKey: string; id: string } | null): Promise<StaleDelivery[]> {
    const margin = reconcileAfterMs / 1000;
    return connection().execute<StaleDelivery[]>(
      `select id, org_id, replay_count, status,
              to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_key
         from webhook_deliveries
        where ((status = 'queued' and updated_at < now() - make_interval(secs => ?))
            or (status = 'failed' and next_attempt_at < now() - make_interval(secs => ?))
            or (status = 'delivering' and updated_at < now() - make_interval(secs => ?)))
          and (?::timestamptz is null or (updated_at, id) > (?::timestamptz, ?))
        order by updated_at, id limit ?`,
      [margin, margin, (attemptTimeoutMs + reconcileAfterMs) / 1000, after?.updatedKey ?? null, after?.updatedKey ?? null, after?.id ?? '', reconcileBatchSize],
    );
  }

  async function reconcile(): Promise<number> {
    try {
      let stale = await findStale(reconcileCursor);
      if (stale.length === 0 && reconcileCursor !== null) stale = await findStale(null);
      await startAll(stale);
      const lastRow = stale.at(-1);
      reconcileCursor = stale.length === reconcileBatchSize && lastRow ? { updatedKey: lastRow.updated_key, id: lastRow.id } : null;
      if (stale.length > 0) {
        const byStatus: Record<string, number> = {};
        for (const row of stale) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
        logger.info('webhook relay: (re)started the series of stale deliveries', { count: stale.length, ...byStatus });
      }
      return stale.length;
    } catch (error) {
      noteFailure('reconcile', error);
      return 0;
    }
  }

  // LISTEN on a dedicated connection, re-established with backoff when it drops.
  let listener: pg.Client | null = null;
  let listenTimer: NodeJS.Timeout | undefined;
  let listenFailures = 0;
  async function listen(): Promise<void> {
    if (stopped) return;
    const client = new pg.Client({ connectionString: options.databaseUrl });
    const retry = () => {
      if (listener === client) listener = null;
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      if (stopped) return;
      const delay = LISTEN_RETRY_MS[Math.min(listenFailures, LISTEN_RETRY_MS.length - 1)]!;
      listenFailures += 1;
      clearTimeout(listenTimer);
      listenTimer = setTimeout(() => void listen(), delay);
    };
    client.on('error', retry);
    client.on('notification', () => void drain());
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_NOTIFY_CHANNEL}`);
      listener = client;
      listenFailures = 0;
      // Anything committed while not listening.
      void drain();
    } catch (error) {
      noteFailure('LISTEN', error);
      retry();
    }
  }

  void listen();
  const poll = setInterval(() => void drain(), pollIntervalMs);
  const reconciler = setInterval(() => void reconcile(), reconcileIntervalMs);
  void drain();
  void reconcile();

  return {
    drain,
    reconcile,
    async stop() {
      stopped = true;
      clearInterval(poll);
      clearInterval(reconciler);
      clearTimeout(listenTimer);
      const client = listener;
      listener = null;
      client?.removeAllListeners('notification');
      await client?.end().catch(() => {});
      await running;
    },
  };
}
