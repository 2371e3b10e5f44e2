import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { EVENTS_NOTIFY_CHANNEL } from '../../../db/entities/index.ts';
import type { Config } from '../../config.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { endpointGets } from '../events/events.schemas.ts';
import { webhookEndpointActorContract } from '../../../workflows/webhook-endpoint.ts';
import { wakeActors } from '../../temporal/actor-wake.ts';
import {
  claimUnfannedEvents,
  drainingEndpoints,
  findCandidates,
  insertDeliveries,
  markFannedOut,
  type EndpointRef,
} from './outbox.repo.ts';

/** Signal-with-start of the actors of endpoints as the outbox queries return them, within `deadlineMs`. */
export function wakeEndpoints(
  temporal: Client,
  config: Pick<Config, 'temporal'>,
  endpoints: readonly EndpointRef[],
  deadlineMs: number,
): Promise<void> {
  return wakeActors(
    temporal,
    config,
    webhookEndpointActorContract,
    endpoints.map((e) => ({ orgId: e.org_id, endpointId: e.id })),
    { deadlineMs },
  );
}

/**
 * The webhook fan-out (a background loop in every worker process). Events are
 * written to `events` in the transaction of the change that caused them; the fan-out turns each
 * into one delivery row per endpoint subscribed when it claims it (an addressed event, an
 * automation's webhook step, into one row for the endpoint it names), and wakes those endpoints'
 * actors.
 *
 * One pass runs batches of the oldest unfanned events until a batch comes back short, each in
 * one transaction:
 *   1. claim them: `select … where fanned_out_at is null order by created_at, id
 *      for update skip locked` (other workers skip them, so several worker processes share the work);
 *   2. insert the deliveries, due now (`on conflict (webhook_id, event_id) do nothing`, so a
 *      repeated pass creates nothing twice), in event order;
 *   3. NOTIFY `herald_webhook_wake` per endpoint (a drain running in any worker sees its rows);
 *   4. set fanned_out_at, commit.
 * Then, after the commit, the endpoints whose drain lease is not held get one signal-with-start
 * each (`webhook-endpoint:<id>`); an endpoint already draining needs none. A failed wake-up
 * loses nothing and does not fail the pass: the rows are committed and the webhook reconciler
 * (`webhook-reconciler.ts`) wakes the endpoint.
 *
 * When it runs: woken by `herald_events` (an insert trigger notifies at commit) through the
 * process's one listener, so a fan-out follows the commit within milliseconds; every 2 s to
 * cover lost notifications and a dropped listener connection.
 */
export interface WebhookFanOutOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  /** Between passes when no notification comes (default 2 s). */
  intervalMs?: number;
  /** Events claimed per transaction (default 100). */
  batchSize?: number;
  /** A wake-up gives up on an unresponsive Temporal after this long (default 10 s). */
  wakeDeadlineMs?: number;
}

/** The fan-out loop; a pass resolves with the events it fanned out. */
export function createWebhookFanOut(options: WebhookFanOutOptions): LoopSpec {
  const { orm, temporal, config } = options;
  const batchSize = options.batchSize ?? 100;
  const wakeDeadlineMs = options.wakeDeadlineMs ?? 10_000;

  /** One batch (steps 1–4); resolves with the events claimed and the endpoints that got rows. */
  async function fanOutBatch(): Promise<{ claimed: number; endpoints: EndpointRef[] }> {
    return orm.em.fork().transactional(async (em) => {
      const eventIds = await claimUnfannedEvents(em, batchSize);
      if (eventIds.length === 0) return { claimed: 0, endpoints: [] };
      const receiving = (await findCandidates(em, eventIds)).filter((candidate) =>
        endpointGets({ id: candidate.webhook_id, events: candidate.events }, { type: candidate.type, addressedTo: candidate.addressed_to }),
      );
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
    const running = await drainingEndpoints(
      orm.em.fork(),
      endpoints.map((e) => e.id),
    );
    return endpoints.filter((e) => !running.has(e.id));
  }

  return {
    name: 'webhook fan-out',
    intervalMs: options.intervalMs ?? 2_000,
    wakeOn: EVENTS_NOTIFY_CHANNEL,
    async pass({ signal, warn }) {
      let total = 0;
      while (!signal.aborted) {
        const batch = await fanOutBatch();
        total += batch.claimed;
        const sleeping = await asleep(batch.endpoints);
        if (sleeping.length > 0) {
          // Committed already: a failed wake-up is the reconciler's to repeat.
          await wakeEndpoints(temporal, config, sleeping, wakeDeadlineMs).catch((error: unknown) => warn('wake-up', error));
        }
        if (batch.claimed < batchSize) break;
      }
      return total;
    },
  };
}
