import type { MikroORM } from '@mikro-orm/postgresql';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { sendStepDuration } from '../../metrics/metrics.ts';
import { createDrainer, ownerGoneSummary, type Drainer, type DrainRun } from '../../queue/drainer.ts';
import { SEND_WAKE_CHANNEL, type QueueWakes } from '../../queue/wakes.ts';
import { renderBroadcastMessage, skipReason } from '../broadcasts/broadcast-message.ts';
import { createRecipientLinks, type RecipientLinks } from '../broadcasts/recipient-links.ts';
import { applyTracking, type TrackingLinks } from '../tracking/tracked-html.ts';
import { trackingBase } from '../tracking/tracking.fns.ts';
import type { EmailDelivery } from './delivery.ts';
import { createDomainQueue, type ClaimedEmail, type DomainQueue, type QueueCursor } from './domain-queue.repo.ts';

/**
 * One drain of a sending domain's queue, as the domain actor's activity runs it in the drain
 * frame (src/queue/drainer.ts: the domain's drain lease, lingering, the report): keep up to
 * four emails per relay pool connection in flight, each one delivery attempt (delivery.ts: the recipients not yet
 * settled, one SMTP transaction, every answer recorded before it returns), and put each email
 * back on the queue at its retry time while deferred recipients remain, or take it off once
 * settled; when the retry window would close before the next try, what is still deferred fails.
 * Scheduled emails are rows due at `scheduled_at`; a cancelled one is never claimed.
 *
 * A claimed email is due again when its lease lapses (refreshed while the attempt runs), so a
 * worker killed mid-batch loses nothing: the next drain sends to the recipients not yet
 * recorded. The only duplicate is an email the relay accepted whose answer was not yet
 * committed (at most the emails in flight at the kill); it keeps its Message-ID.
 */

export interface DomainDrainDeps {
  orm: MikroORM;
  config: Pick<Config, 'sends' | 'queues' | 'encryptionKey' | 'encryptionKeys' | 'http'>;
  delivery: EmailDelivery;
  wakes: QueueWakes;
  logger: Logger;
}

/** A claimed email's lease; extended every tick while its attempt runs. */
const EMAIL_LEASE_SECONDS = 30;
/**
 * Emails in flight per relay connection: one on the wire, the next built and signed, and the
 * ones whose answer waits for its group commit (a slot is held until the record commits).
 */
export const IN_FLIGHT_PER_CONNECTION = 4;

/** The delay before the attempt after `attempt`, or null when the retry window would close first. */
export function nextRetryDelay(config: Pick<Config, 'sends'>, attempt: number, firstAttemptMs: number, now: number): number | null {
  const schedule = config.sends.retryScheduleMs;
  const delay = schedule.length < 2 ? null : (schedule[Math.min(attempt, schedule.length - 1)] ?? null);
  return delay !== null && now - firstAttemptMs + delay <= config.sends.retryWindowMs ? delay : null;
}

/**
 * A message at its turn: a broadcast message is skipped (null) when its contact may no longer be
 * mailed or the broadcast was cancelled, otherwise rendered for the contact as it is now; any
 * other email gets its open pixel and tracked links as its own switches say. Tracking URLs are
 * on the domain's verified tracking host, else on PUBLIC_URL.
 */
type MessageRender = (email: ClaimedEmail) => Promise<ClaimedEmail | null>;

function createMessageRender(delivery: EmailDelivery, config: DomainDrainDeps['config']): MessageRender {
  const recipientLinks = config.encryptionKey ? createRecipientLinks(config.encryptionKey, config.http.publicUrl) : null;
  const isUnsubscribeLink = (target: string) => target.startsWith(`${config.http.publicUrl}/unsubscribe/`);
  const trackingOf = (email: ClaimedEmail, links: RecipientLinks): TrackingLinks => {
    const base = trackingBase(config.http.publicUrl, email.trackingHost);
    return { open: links.openUrl(email.id, base), click: (target) => links.clickUrl(email.id, target, base), skip: isUnsubscribeLink };
  };
  return async (email) => {
    const content = email.broadcast;
    if (!content) {
      const html = email.html;
      // Without the key nothing can be signed: the message goes untracked rather than not at all.
      if (!html || !recipientLinks || !(email.tracking.opens || email.tracking.clicks)) return email;
      return { ...email, html: applyTracking(html, email.tracking, trackingOf(email, recipientLinks)) };
    }
    const reason = skipReason(content);
    if (reason) {
      await delivery.skip({ orgId: email.orgId, emailId: email.id }, reason);
      return null;
    }
    // Launch refuses without the key; a key removed since then stops the broadcast's messages here.
    if (!recipientLinks) throw new Error('HERALD_ENCRYPTION_KEY is not set: unsubscribe links cannot be signed');
    const tracking = trackingOf(email, recipientLinks);
    const rendered = renderBroadcastMessage(content, {
      unsubscribe: recipientLinks.url(email.id),
      open: tracking.open,
      click: tracking.click,
      listId: `<${content.broadcastId}.${email.domain}>`,
      feedbackId: `${content.broadcastId}:${email.orgId}:herald`,
    });
    return {
      ...email,
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      headers: { ...email.headers, ...rendered.headers },
    };
  };
}

interface AttemptDeps extends Pick<DomainDrainDeps, 'config' | 'delivery' | 'logger'> {
  queue: DomainQueue;
  render: MessageRender;
}

/** One delivery attempt at a claimed email, its outcome counted in the drain's run. */
function createEmailAttempt({ config, delivery, logger, queue, render }: AttemptDeps) {
  async function expireAfterFailure(email: ClaimedEmail, run: DrainRun): Promise<void> {
    try {
      const { status } = await delivery.expire({ orgId: email.orgId, emailId: email.id });
      run.tally.exhausted += 1;
      run.count(status);
    } catch (error) {
      logger.warn('send attempt failed after the retry window closed and the email could not be ended; retried when its lease lapses', {
        emailId: email.id,
        error,
      });
    }
  }

  return async function attempt(email: ClaimedEmail, run: DrainRun): Promise<void> {
    const { tally } = run;
    const nextDelayMs = nextRetryDelay(config, email.handoffAttempts, email.firstAttemptMs, Date.now());
    try {
      const message = await render(email);
      if (!message) {
        tally.lastOutcome = 'skipped';
        run.count('skipped');
        return;
      }
      const delivered = await delivery.deliverClaimed(message, nextDelayMs);
      if (delivered.heldUntil) {
        // Not attempted (its egress pool has no room today, or its destination is backing off or full):
        // due again then, the claim's attempt given back; a shaping hold no later than the retry
        // window's end, when the attempt that finds no retry left records it as a deferral.
        const windowEnd = email.firstAttemptMs + config.sends.retryWindowMs;
        const until = delivered.heldWithinWindow ? Math.min(delivered.heldUntil.getTime(), windowEnd) : delivered.heldUntil.getTime();
        await queue.hold(email.orgId, email.id, new Date(until));
        run.count('deferred', email.dueMs);
        tally.lastOutcome = 'held';
        return;
      }
      let { status } = delivered;
      if (status === 'sending' && nextDelayMs === null) status = (await delivery.expire({ orgId: email.orgId, emailId: email.id })).status;
      // A settled email left the queue in its own record (next_attempt_at null); one still sending is due again at its retry.
      if (status === 'sending')
        await queue.reschedule(email.orgId, email.id, nextDelayMs === null ? null : new Date(Date.now() + nextDelayMs));
      run.count(status === 'sending' ? 'deferred' : status, email.dueMs);
      if (status === 'sent') tally.delivered += 1;
      else if (status === 'failed') tally.exhausted += 1;
      else if (status === 'sending') tally.failed += 1;
      tally.lastFailed = status !== 'sent' && status !== 'cancelled';
      tally.lastOutcome = status;
    } catch (error) {
      // This email only: it stays claimed until its lease lapses, then the next drain tries it
      // again (each claim counts an attempt). Once the retry window has closed, an attempt
      // that keeps failing ends the email: what is still pending fails, as for SMTP deferrals.
      logger.warn('send attempt failed; the email is retried when its lease lapses', {
        emailId: email.id,
        attempt: email.handoffAttempts,
        error,
      });
      tally.lastFailed = true;
      tally.lastOutcome = error instanceof Error ? error.message : String(error);
      if (nextDelayMs === null) await expireAfterFailure(email, run);
    }
  };
}

/** The sending domain's drain: the frame (src/queue/drainer.ts) with the domain's queue, its claim and the attempt above. */
export function createDomainDrainer(deps: DomainDrainDeps): Drainer<SendDomainInput> {
  const { orm, config, delivery, wakes } = deps;
  const queue = createDomainQueue(orm);
  const attempt = createEmailAttempt({ ...deps, queue, render: createMessageRender(delivery, config) });
  return createDrainer<SendDomainInput, ClaimedEmail>({
    pipeline: 'sends',
    wakes,
    wakeChannel: SEND_WAKE_CHANNEL,
    lingerMs: config.queues.drainLingerMs,
    plan({ orgId, domainId }, run) {
      let broadcastCursor: QueueCursor | null = null;
      return {
        ownerId: domainId,
        concurrency: config.sends.relayMaxConnections * IN_FLIGHT_PER_CONNECTION,
        lease: (seconds) => queue.leaseDomain(orgId, domainId, seconds),
        release: () => queue.releaseDomain(orgId, domainId),
        ownerGone: () => Promise.resolve(ownerGoneSummary('domain deleted')),
        async claim(limit) {
          const claimed = sendStepDuration.startTimer({ step: 'claim' });
          const items = await queue.claim(orgId, domainId, limit, EMAIL_LEASE_SECONDS, broadcastCursor).finally(claimed);
          // Claimed in queue order (transactional first): the last broadcast message is where the next claim starts.
          broadcastCursor = items.findLast((item) => item.broadcast !== null)?.cursor ?? broadcastCursor;
          return { claimed: items.length, items };
        },
        work: (email) => attempt(email, run),
        extendLeases: (ids) => queue.extendLeases(orgId, ids, EMAIL_LEASE_SECONDS),
        // Every open email is claimable once due: nothing else can hold one back (no recover).
        nextDue: () => queue.nextDue(orgId, domainId),
        // An email due now comes with a wake-up (acceptance, a broadcast's audience and an
        // automation's send NOTIFY at their commit); a scheduled one, a retry, a hold or a lapsed
        // lease is found by nextDue. So a claim that took fewer than asked took every due email:
        // no claim each time a slot frees, which at 20 sends/s were two claims in three, all empty.
        claimsAllDue: true,
        state: () => queue.state(orgId, domainId),
      };
    },
  });
}
