import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { isSubscribed, recordEvent } from '../events/events.fns.ts';
import { findSubscribedEventTypes } from '../events/webhook-subscriptions.repo.ts';
import { emailEventData } from '../outbound/outcomes.ts';
import type { TrackingHitState } from '../../../db/entities/index.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { recordEmailEvents, type EmailEventInput } from '../metrics/email-events.ts';
import { fireEmailEngagement, type EmailEngagement } from '../automations/automation-triggers.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { claimPendingHits, engagementOf, hitsOfMessages, setHitStates, type EngagedEmail, type HitRow } from './tracking.repo.ts';

/** A hit is judged once it is this old, so a burst it belongs to has arrived whole. */
export const TRACKING_SETTLE_MS = 1_000;
/** Clicks of different links of one message this close together are a scanner or a prefetcher. */
export const BURST_WINDOW_MS = 1_000;
const PASS_LIMIT = 1_000;

/**
 * Whether `hit` belongs to a burst among `neighbours` (the hits of its message): a click with a
 * click on another link within BURST_WINDOW_MS; an open with clicks on two different links
 * within that window (the pixel fetched along with every link).
 */
export function inBurst(
  hit: Pick<HitRow, 'id' | 'kind' | 'url' | 'at_ms'>,
  neighbours: readonly Pick<HitRow, 'id' | 'kind' | 'url' | 'at_ms'>[],
): boolean {
  const near = neighbours.filter(
    (other) => other.id !== hit.id && other.kind === 'click' && Math.abs(other.at_ms - hit.at_ms) <= BURST_WINDOW_MS,
  );
  if (hit.kind === 'click') return near.some((other) => other.url !== hit.url);
  return new Set(near.map((other) => other.url)).size >= 2;
}

interface EngagementEvent {
  hit: HitRow;
  message: EngagedEmail;
  type: 'opened' | 'clicked';
}

/** `email.opened` / `email.clicked` for the endpoints subscribed to them (a click carries its link). */
async function recordEngagementEvents(tx: EntityManager, events: readonly EngagementEvent[]): Promise<void> {
  const subscribed = await findSubscribedEventTypes(
    tx,
    events.map((event) => event.hit.org_id),
  );
  for (const { hit, message, type } of events) {
    const eventType = type === 'opened' ? 'email.opened' : 'email.clicked';
    if (!isSubscribed(subscribed, hit.org_id, eventType)) continue;
    const data = emailEventData(
      {
        id: message.email_id,
        messageId: message.message_id,
        fromEmail: message.from_email,
        subject: message.subject,
        broadcastId: message.broadcast_id,
      },
      message.recipient,
      new Date(hit.at_ms),
    );
    recordEvent(tx, hit.org_id, eventType, type === 'clicked' ? { ...data, url: hit.url } : data);
  }
}

/**
 * Judges pending open and click hits: a hit in a burst is flagged; otherwise the recipient's
 * first open and first click each become one `opened` / `clicked` email event (feeding the
 * broadcast's metrics, GET /metrics and the email's events) and one `email.opened` /
 * `email.clicked` webhook event, later ones are repeats. A counted click also counts an
 * open when none was counted (images are often blocked; the click proves the message was
 * opened). A first open or click also fires the email's automation triggers (runs waiting for
 * it resume, `email.opened` / `email.clicked` automations start; automation-triggers.ts). A
 * background loop of the worker, every `intervalMs` (default 2 s); one transaction per pass,
 * hits stay pending if it fails. A pass resolves with the hits judged.
 */
export function createTrackingCounter(deps: {
  orm: MikroORM;
  intervalMs?: number;
  wakeAutomations?: AutomationWaker | undefined;
}): LoopSpec {
  return {
    name: 'tracking counter',
    intervalMs: deps.intervalMs ?? 2_000,
    async pass(): Promise<number> {
      const { judged, touched } = await deps.orm.em.fork().transactional(async (tx) => {
        const pending = await claimPendingHits(tx, TRACKING_SETTLE_MS, PASS_LIMIT);
        if (pending.length === 0) return { judged: 0, touched: [] };
        const messages = [...new Map(pending.map((hit) => [hit.email_id, { org_id: hit.org_id, email_id: hit.email_id }])).values()];
        const neighbours = await hitsOfMessages(tx, messages);
        const engagement = new Map((await engagementOf(tx, messages)).map((row) => [row.email_id, row]));
        const states = new Map<string, TrackingHitState>();
        const events: EmailEventInput[] = [];
        const engagements: EmailEngagement[] = [];
        const webhookEvents: EngagementEvent[] = [];
        for (const hit of pending) {
          const message = engagement.get(hit.email_id);
          const around = neighbours.filter((other) => other.email_id === hit.email_id);
          if (!message || inBurst(hit, around)) {
            states.set(hit.id, 'flagged');
            continue;
          }
          const event = (type: 'opened' | 'clicked') => {
            engagements.push({ orgId: hit.org_id, emailId: hit.email_id, type });
            webhookEvents.push({ hit, message, type });
            events.push({
              orgId: hit.org_id,
              type,
              recipient: message.recipient,
              domain: message.domain,
              emailId: hit.email_id,
              broadcastId: hit.broadcast_id,
              occurredAt: new Date(hit.at_ms),
            });
          };
          const first = hit.kind === 'open' ? !message.opened : !message.clicked;
          states.set(hit.id, first ? 'counted' : 'repeat');
          if (!first) continue;
          if (hit.kind === 'click') {
            event('clicked');
            message.clicked = true;
          }
          if (!message.opened) {
            event('opened');
            message.opened = true;
          }
        }
        await setHitStates(tx, states);
        if (events.length === 0) return { judged: pending.length, touched: [] };
        await recordEmailEvents(tx, events);
        await recordEngagementEvents(tx, webhookEvents);
        return { judged: pending.length, touched: await fireEmailEngagement(tx, engagements) };
      });
      deps.wakeAutomations?.(touched);
      return judged;
    },
  };
}
