import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { EVENTS_NOTIFY_CHANNEL } from '../../../db/entities/index.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { endpointReceives } from '../events/events.schemas.ts';
import { webhookEndpointActorContract } from '../../../workflows/webhook-endpoint.ts';
import { wakeActors } from '../../temporal/actor-wake.ts';
import { claimUnfannedEvents, drainingEndpoints, findCandidates, findStrandedEndpoints, insertDeliveries, markFannedOut, type EndpointRef } from './outbox.repo.ts';

/**
 * The webhook outbox relay (runs in every worker process). Events are written to `events` in
 * the transaction of the change that caused them; the relay turns each into one delivery row
 * per endpoint subscribed when it claims it, and wakes those endpoints' actors.
 *
 * One pass, per batch of the oldest unfanned events, in one transaction:
 *   1. claim them: `select … where fanned_out_at is null order by created_at, id
 *      for update skip locked` (other relays skip them, so several worker processes share the work);
 *   2. insert the deliveries, due now (`on conflict (webhook_id, event_id) do nothing`, so a
 *      repeated pass creates nothing twice), in event order;
 *   3. NOTIFY `herald_webhook_wake` per endpoint (a drain running in any worker sees its rows);
 *   4. set fanned_out_at, commit.
 * Then, after the commit, the endpoints whose drain lease is not held get one signal-with-start
 * each (`webhook-endpoint:<id>`); an endpoint already draining needs none. A failed wake-up
 * loses nothing: the rows are committed and the reconciler wakes the endpoint.
 *
 * Wake-ups of the relay: LISTEN on `herald_events` (an insert trigger notifies at commit), so a
 * fan-out follows the commit within milliseconds; a poll every 2 s covers lost notifications
 * and a dropped listener connection (re-established with backoff).
 *
 * Reconciler (at start with no margin, then every 30 s): wakes the actor of every endpoint that
 * has rows due for longer than a margin (default 10 s) and no drain lease: an actor that was terminated, lost
 * with the Temporal server's state, or never started because Temporal was down. A wake of an
 * actor that is merely slow is harmless (one signal).
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
  /** The reconciler's margin (default 10 s): how long a row may be due with no drain running before its actor is woken. */
  reconcileAfterMs?: number;
  /** Endpoints woken per reconciler pass at most (default 500). */
  reconcileBatchSize?: number;
  /** A wake-up gives up on an unresponsive Temporal after this long (default 10 s). */
  wakeDeadlineMs?: number;
}

export interface OutboxRelay {
  /** Runs passes until no unfanned event is left (or one fails); resolves with the events fanned out. */
  drain(): Promise<number>;
  /** One reconciler pass (margin: the relay's unless given); resolves with the endpoint actors woken. */
  reconcile(marginMs?: number): Promise<number>;
  stop(): Promise<void>;
}

const LISTEN_RETRY_MS = [1_000, 2_000, 5_000, 10_000];
const FAILURE_LOG_EVERY_MS = 30_000;

/** Starts the relay: it listens, polls and reconciles until `stop()`. */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { orm, temporal, config, logger } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 2_000;
  const batchSize = options.batchSize ?? 100;
  const reconcileIntervalMs = options.reconcileIntervalMs ?? 30_000;
  const reconcileAfterMs = options.reconcileAfterMs ?? 10_000;
  const reconcileBatchSize = options.reconcileBatchSize ?? 500;
  const wakeDeadlineMs = options.wakeDeadlineMs ?? 10_000;

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

  /** Signal-with-start of each endpoint's actor, within the deadline. */
  const wake = (endpoints: readonly EndpointRef[]) =>
    wakeActors(temporal, config, webhookEndpointActorContract, endpoints.map((e) => ({ orgId: e.org_id, endpointId: e.id })), { deadlineMs: wakeDeadlineMs });

  /** One batch (steps 1–4); resolves with the events claimed and the endpoints that got rows. */
  async function fanOutBatch(): Promise<{ claimed: number; endpoints: EndpointRef[] }> {
    return orm.em.fork().transactional(async (em) => {
      const eventIds = await claimUnfannedEvents(em, batchSize);
      if (eventIds.length === 0) return { claimed: 0, endpoints: [] };
      const receiving = (await findCandidates(em, eventIds)).filter((candidate) => endpointReceives(candidate.events, candidate.type));
      const endpoints = new Map<string, EndpointRef>();
      for (const candidate of receiving) endpoints.set(candidate.webhook_id, { id: candidate.webhook_id, org_id: candidate.org_id });
      await insertDeliveries(em, receiving, [...endpoints.keys()]);
      await markFannedOut(em, eventIds);
      return { claimed: eventIds.length, endpoints: [...endpoints.values()] };
    });
  }

  /** The endpoints among `endpoints` whose drain is not running: they need a signal. */
  async function asleep(endpoints: readonly EndpointRef[]): Promise<EndpointRef[]> {
    if (endpoints.length === 0) return [];
    const running = await drainingEndpoints(orm.em.fork(), endpoints.map((e) => e.id));
    return endpoints.filter((e) => !running.has(e.id));
  }

  async function drainLoop(): Promise<number> {
    let total = 0;
    try {
      do {
        again = false;
        for (;;) {
          if (stopped) return total;
          const batch = await fanOutBatch();
          total += batch.claimed;
          const sleeping = await asleep(batch.endpoints);
          if (sleeping.length > 0) {
            // Committed already: a failed wake-up is the reconciler's to repeat.
            await wake(sleeping).catch((error: unknown) => noteFailure('wake-up', error));
          }
          if (batch.claimed < batchSize) break;
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

  /** Endpoints with rows due for longer than `marginMs` (or attempts whose lease lapsed) and no drain running. */
  function findStranded(marginMs: number): Promise<EndpointRef[]> {
    return findStrandedEndpoints(orm.em.fork(), marginMs, reconcileBatchSize);
  }

  async function reconcile(marginMs: number = reconcileAfterMs): Promise<number> {
    try {
      const stranded = await findStranded(marginMs);
      if (stranded.length === 0) return 0;
      await wake(stranded);
      logger.info('webhook relay: woke endpoint actors with stranded deliveries', { count: stranded.length });
      return stranded.length;
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
  // At start no margin: a due row whose endpoint holds no drain lease has nobody on it (a worker
  // coming back after an outage); waking a healthy actor once more costs one signal.
  void reconcile(0);

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
