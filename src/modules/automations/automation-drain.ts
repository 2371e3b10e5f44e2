/**
 * One drain of an automation's queue, as its actor's activity runs it in the drain frame
 * (src/queue/drainer.ts: the automation's drain lease, lingering for a wake-up, the report read
 * after the release). Each claim is a batch, in ONE transaction:
 *
 * 1. lock up to `batchSize` due runs of the automation (only while it is active: a paused
 *    automation's runs stay where they are and continue when it is active again);
 * 2. advance each through its steps (automation-engine.ts) until it waits, ends or fails, with
 *    conditions reading the database inside the transaction;
 * 3. render the emails its send steps decided (the template as published now) and write them to
 *    their domains' queues keyed by (run, step); write the runs, their timelines, the contacts'
 *    changes, segment changes, events and the counters; commit.
 *
 * Nothing a step does leaves the database before the commit (an email is a row the domain's
 * actor delivers afterwards; a webhook is an event the fan-out delivers), so a crash at any
 * point either keeps the batch whole or redoes it whole: no step runs twice. The batch's work is
 * claimed and finished inside `claim`, so the frame has no item in flight between claims.
 */
import { LRUCache } from 'lru-cache';
import { DeadlockException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, AutomationDefinition, Domain, Template } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import type { AutomationInput } from '../../../workflows/automation.ts';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import type { Logger } from '../../logger.ts';
import { createDrainer, ownerGoneSummary, type Drainer, type DrainRun } from '../../queue/drainer.ts';
import { AUTOMATION_WAKE_CHANNEL, type QueueWakes } from '../../queue/wakes.ts';
import type { RecipientLinks } from '../broadcasts/recipient-links.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { renderTemplate } from '../sends/template-render.ts';
import { isSubscribed } from '../events/events.fns.ts';
import { findSubscribedEventTypes } from '../events/webhook-subscriptions.repo.ts';
import type { AutomationDefinition as Definition } from './automation-definition.ts';
import { advanceRun, type Advance, type ClaimedRun, type RunContact, type RunFacts } from './automation-engine.ts';
import {
  automationQueueState,
  chargeCredits,
  changeSegments,
  claimDueRuns,
  contactHadEvent,
  emailHadEvent,
  insertEvents,
  insertTimeline,
  isInSegment,
  leaseAutomation,
  lockCredits,
  lockDomainRoom,
  nextDueRun,
  releaseAutomation,
  updateContacts,
  updateRuns,
  writeEmails,
  type RenderedEmail,
} from './automation-queue.repo.ts';
import type { TouchedAutomation } from './automation-runs.repo.ts';
import { addStats, type StatDeltas } from './automation-stats.repo.ts';
import { enrolContactChanges, enrolSegmentMembers } from './automation-triggers.ts';
import { groupByKey } from './automation-triggers.fns.ts';
import type { AutomationWaker } from './automation-wake.ts';

export interface AutomationDrainDeps {
  orm: MikroORM;
  wakes: QueueWakes;
  logger: Logger;
  lingerMs: number;
  /** Signal-with-start of sending-domain actors whose drain is not running. */
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
  /** Wakes automations the batch's contact and segment changes triggered (else the reconciler does). */
  wakeAutomations?: AutomationWaker | undefined;
  /** Signs each email's unsubscribe link (`unsubscribe_url` in templates, List-Unsubscribe); null without HERALD_ENCRYPTION_KEY. */
  links: RecipientLinks | null;
  /** Runs per batch (default 500). */
  batchSize?: number;
  /** Batches in flight at once, each in its own transaction (default 1). */
  lanes?: number;
}

const DEFAULT_BATCH = 500;
/**
 * Batches in flight at once (each its own transaction; FOR UPDATE SKIP LOCKED keeps their runs
 * apart). One by default: on two shared cores three lanes advanced no more runs per second than
 * one (the per-run writes use the cores either way) and worked the due order less strictly
 * (BENCHMARKS.md, 2026-11-27 late); a deployment with cores to spare can raise it.
 */
const DEFAULT_LANES = 1;
/** A claim returns to the drain frame after about this long (heartbeat, lease renewal, abort). */
const CLAIM_SLICE_MS = 2_000;

/** A published definition never changes, so it is cached by id for as long as it is used. */
function createDefinitionCache() {
  const cache = new LRUCache<string, { version: number; definition: Definition }>({ max: 1_000 });
  return async (em: EntityManager, id: string) => {
    const hit = cache.get(id);
    if (hit) return hit;
    const row = await em.findOneOrFail(AutomationDefinition, { id });
    const value = { version: row.version, definition: row.definition as Definition };
    cache.set(id, value);
    return value;
  };
}

/** The start of the UTC day after `at`. */
function nextUtcDay(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
}

/** The facts conditions read, inside the batch's transaction; credits and each sending domain's warm-up room locked on first use. */
function batchFacts(em: EntityManager, orgId: string, now: Date): RunFacts & { balance: () => number } {
  let credits: { balance: number; overage: boolean } | null = null;
  let taken = 0;
  /** Per sending domain (by name): what its warm-up cap leaves of today, null when uncapped; locked for the batch. */
  const rooms = new Map<string, { left: number | null }>();
  const day = utcDay(now);
  return {
    inSegment: (contact: RunContact, segmentId: string) => isInSegment(em, orgId, contact.id, contact.tags, segmentId),
    emailHad: (emailId, kind) => emailHadEvent(em, orgId, emailId, kind),
    hadEvent: (contactId, name) => contactHadEvent(em, orgId, contactId, name),
    async takeCredit() {
      credits ??= await lockCredits(em, orgId);
      if (!credits.overage && taken >= credits.balance) return false;
      taken += 1;
      return true;
    },
    /** The credits the workspace had when the batch locked them (the rest of its sends are overage). */
    balance: () => credits?.balance ?? 0,
    async takeSendRoom(from: string) {
      const name = from.slice(from.lastIndexOf('@') + 1).toLowerCase();
      let domain = rooms.get(name);
      if (!domain) {
        domain = await lockDomainRoom(em, orgId, name, day);
        rooms.set(name, domain);
      }
      if (domain.left === null) return null;
      if (domain.left <= 0) return nextUtcDay(now);
      domain.left -= 1;
      return null;
    },
  };
}

/** The batch's advances as rows: emails rendered from the templates as published now. */
async function renderEmails(
  em: EntityManager,
  advances: readonly Advance[],
  links: RecipientLinks | null,
): Promise<{ emails: RenderedEmail[]; failures: Map<string, string> }> {
  const wanted = advances.flatMap((a) => a.emails.map((email) => ({ runId: a.runId, email })));
  const failures = new Map<string, string>();
  if (wanted.length === 0) return { emails: [], failures };
  const templates = new Map(
    (await em.find(Template, { id: { $in: [...new Set(wanted.map((w) => w.email.templateId))] } })).map((t) => [t.id, t]),
  );
  const domainNames = [...new Set(wanted.map((w) => w.email.from.slice(w.email.from.lastIndexOf('@') + 1).toLowerCase()))];
  const domains = new Map((await em.find(Domain, { domain: { $in: domainNames } })).map((d) => [d.domain, d]));
  const emails: RenderedEmail[] = [];
  for (const { runId, email } of wanted) {
    const template = templates.get(email.templateId);
    const domain = domains.get(email.from.slice(email.from.lastIndexOf('@') + 1).toLowerCase());
    let problem: string | null = null;
    if (!template) problem = `template ${email.templateId} no longer exists`;
    else if (template.status !== 'published') problem = `template ${email.templateId} is ${template.status}, not published`;
    else if (!domain || domain.status !== 'verified') problem = `the sending domain of ${email.from} is not verified`;
    if (problem) {
      failures.set(runId, problem);
      continue;
    }
    try {
      const unsubscribeUrl = links?.url(email.emailId) ?? null;
      const variables = unsubscribeUrl ? { ...email.variables, unsubscribe_url: unsubscribeUrl } : email.variables;
      const rendered = renderTemplate({ subject: template!.subject, html: template!.html }, variables);
      emails.push({
        runId,
        stepId: email.stepId,
        emailId: email.emailId,
        domainId: domain!.id,
        domain: domain!.domain,
        from: email.from,
        fromName: email.fromName,
        replyTo: email.replyTo,
        to: email.to,
        contactId: email.contactId,
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text ?? null,
        templateId: template!.id,
        templateVersion: template!.version,
        tracking: email.tracking,
        headers: unsubscribeUrl ? { 'List-Unsubscribe': `<${unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {},
      });
    } catch (error) {
      failures.set(runId, error instanceof Error ? error.message : String(error));
    }
  }
  return { emails, failures };
}

/** Ends a run whose step could not be done (its email could not be rendered): failed, with why. */
function failAdvance(advance: Advance, error: string): void {
  advance.status = 'failed';
  advance.error = error;
  advance.dueAt = null;
  advance.waitingFor = null;
  advance.emails = [];
  advance.contactUpdate = null;
  advance.segmentAdds = [];
  advance.segmentRemoves = [];
  advance.webhooks = [];
  advance.timeline.push({ stepId: advance.stepId ?? '-', kind: 'send_email', outcome: 'failed', detail: { error } });
}

/** An ended run as GET /automations/{id}/runs answers it (the automation.run.* events carry it). */
function runSummary(advance: Advance, claimed: ClaimedRun, definitionVersion: number, at: Date) {
  return {
    _id: advance.runId,
    automation_id: claimed.automationId,
    contact_id: claimed.contact?.id ?? null,
    status: advance.status,
    step_id: advance.stepId,
    due_at: null,
    waiting_for: null,
    definition_version: definitionVersion,
    exit_reason: advance.exitReason,
    error: advance.error,
    created_at: claimed.createdAt.toISOString(),
    updated_at: at.toISOString(),
    ended_at: at.toISOString(),
  };
}

/**
 * The automation.run.completed / .failed events of the batch's ended runs, for the types an
 * enabled endpoint of the workspace subscribes to: an endpoint receives only events written
 * after it existed, so an event nobody subscribes to now would never be delivered (as the send
 * path's group commit leaves out email.sent; webhook-subscriptions.repo.ts).
 */
async function runEndEvents(
  em: EntityManager,
  input: AutomationInput,
  advances: readonly Advance[],
  claimedById: ReadonlyMap<string, ClaimedRun>,
  versions: ReadonlyMap<string, number>,
  now: Date,
): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const ended = advances.filter((a) => a.status === 'completed' || a.status === 'failed');
  if (ended.length === 0) return [];
  const subscribed = await findSubscribedEventTypes(em, [input.orgId]);
  const announced = ended.filter((a) => isSubscribed(subscribed, input.orgId, `automation.run.${a.status as 'completed' | 'failed'}`));
  if (announced.length === 0) return [];
  const name = (await em.findOne(Automation, { id: input.automationId }))?.name ?? '';
  return announced.map((a) => ({
    type: `automation.run.${a.status}`,
    data: {
      run: runSummary(a, claimedById.get(a.runId)!, versions.get(a.runId) ?? 0, now),
      automation: { _id: input.automationId, name },
    },
  }));
}

/** Claims, advances and writes one batch of the automation's due runs in one transaction. */
async function runBatch(
  deps: AutomationDrainDeps,
  definitionOf: ReturnType<typeof createDefinitionCache>,
  input: AutomationInput,
  limit: number,
  run: DrainRun,
): Promise<{ claimed: number; idleDomains: string[]; triggered: TouchedAutomation[] }> {
  return scopeToOrg(deps.orm.em.fork(), input.orgId).transactional(async (em) => {
    const runs: ClaimedRun[] = await claimDueRuns(em, input.orgId, input.automationId, limit);
    if (runs.length === 0) return { claimed: 0, idleDomains: [], triggered: [] };
    const now = new Date();
    const facts = batchFacts(em, input.orgId, now);
    const advances: Advance[] = [];
    const versions = new Map<string, number>();
    for (const claimed of runs) {
      const { definition, version } = await definitionOf(em, claimed.definitionId);
      versions.set(claimed.id, version);
      advances.push(await advanceRun(claimed, definition, now, facts, () => newId()));
    }
    const claimedById = new Map(runs.map((r) => [r.id, r]));
    const rendered = await renderEmails(em, advances, deps.links);
    const { failures } = rendered;
    for (const advance of advances) {
      const failure = failures.get(advance.runId);
      if (failure) failAdvance(advance, failure);
    }
    // The first emails take the balance, the rest overage (chargeCredits), so a refund gives back the same.
    const emails = rendered.emails.filter((e) => !failures.has(e.runId)).map((e, index) => ({ ...e, overage: index >= facts.balance() }));
    const written = await writeEmails(em, input.orgId, emails);
    // An email written by an earlier try of the same step keeps its id in the run's context.
    for (const advance of advances) {
      for (const email of advance.emails) {
        const id = written.ids.get(`${advance.runId}/${email.stepId}`);
        if (id && id !== email.emailId) advance.context.emails = { ...advance.context.emails, [email.stepId]: id };
      }
    }
    const contacts = new Map(runs.map((r) => [r.id, r.contact]));
    await updateRuns(
      em,
      input.orgId,
      advances.map((a) => ({
        id: a.runId,
        status: a.status,
        stepId: a.stepId,
        dueAt: a.dueAt?.toISOString() ?? null,
        waitingFor: a.waitingFor,
        context: a.context,
        exitReason: a.exitReason,
        error: a.error,
      })),
    );
    await insertTimeline(
      em,
      input.orgId,
      advances.flatMap((a) => a.timeline.map((t) => ({ runId: a.runId, ...t }))),
    );
    const updated = advances.flatMap((a) => {
      const contact = contacts.get(a.runId);
      return a.contactUpdate && contact ? [{ id: contact.id, before: contact.tags, ...a.contactUpdate }] : [];
    });
    await updateContacts(em, input.orgId, updated);
    const membership = (list: 'segmentAdds' | 'segmentRemoves') =>
      advances.flatMap((a) => a[list].map((segmentId) => ({ segmentId, contactId: contacts.get(a.runId)?.id ?? '' })));
    const joined = await changeSegments(em, input.orgId, membership('segmentAdds'), membership('segmentRemoves'));
    // What the steps changed triggers automations as the same change through the API would.
    const triggered = await enrolContactChanges(
      em,
      input.orgId,
      updated.map((u) => ({ contactId: u.id, created: false, tagsBefore: u.before, tagsAfter: u.tags })),
    );
    for (const [segmentId, contactIds] of groupByKey(joined.map((m) => [m.segment_id, m.contact_id] as const)))
      triggered.push(...(await enrolSegmentMembers(em, input.orgId, segmentId, contactIds)));
    await insertEvents(em, input.orgId, [
      ...advances.flatMap((a) =>
        a.webhooks.map((w) => ({
          type: 'automation.webhook',
          data: {
            automation_id: input.automationId,
            run_id: a.runId,
            step_id: w.stepId,
            endpoint_id: w.endpointId,
            contact: contacts.get(a.runId) ? { _id: contacts.get(a.runId)!.id, email: contacts.get(a.runId)!.email } : null,
            payload: w.payload,
          },
        })),
      ),
      ...(await runEndEvents(em, input, advances, claimedById, versions, now)),
    ]);
    const sent = emails.length;
    await chargeCredits(em, input.orgId, sent);
    const ended = (status: Advance['status']) => advances.filter((a) => a.status === status).length;
    const deltas: StatDeltas = {
      activeRuns: -(ended('completed') + ended('failed') + ended('exited')),
      completedRuns: ended('completed'),
      failedRuns: ended('failed'),
      emailsSent: sent,
      creditsUsed: sent,
    };
    await addStats(em, input.orgId, new Map([[input.automationId, deltas]]));
    for (const advance of advances) {
      run.count(advance.status === 'failed' ? 'failed' : 'delivered');
      if (advance.status === 'failed') {
        run.tally.failed += 1;
        run.tally.lastFailed = true;
        run.tally.lastOutcome = advance.error;
      } else {
        run.tally.delivered += 1;
        run.tally.lastFailed = false;
        run.tally.lastOutcome = advance.status === 'active' ? `waiting at ${advance.stepId}` : advance.status;
      }
    }
    return { claimed: runs.length, idleDomains: written.idleDomains, triggered };
  });
}

/** Retries of a batch that lost a deadlock to another batch (two runs of one contact in two batches). */
const DEADLOCK_RETRIES = 3;

/** runBatch, redone when PostgreSQL chose it as a deadlock's victim (its transaction rolled back whole). */
async function runBatchRetrying(...args: Parameters<typeof runBatch>): ReturnType<typeof runBatch> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await runBatch(...args);
    } catch (error) {
      if (!(error instanceof DeadlockException) || attempt > DEADLOCK_RETRIES) throw error;
    }
  }
}

export function createAutomationDrainer(deps: AutomationDrainDeps): Drainer<AutomationInput> {
  const definitionOf = createDefinitionCache();
  const batchSize = deps.batchSize ?? DEFAULT_BATCH;
  const lanes = deps.lanes ?? DEFAULT_LANES;
  return createDrainer<AutomationInput, { id: string }>({
    pipeline: 'automations',
    wakes: deps.wakes,
    wakeChannel: AUTOMATION_WAKE_CHANNEL,
    lingerMs: deps.lingerMs,
    plan(input, run) {
      const em = () => deps.orm.em.fork();
      /** One batch and the wake-ups its commit owes (automations it triggered, idle sending domains). */
      async function batch(): Promise<number> {
        const { claimed, idleDomains, triggered } = await runBatchRetrying(deps, definitionOf, input, batchSize, run);
        deps.wakeAutomations?.(triggered);
        if (idleDomains.length > 0) {
          await deps
            .wakeDomainActors(idleDomains.map((domainId) => ({ orgId: input.orgId, domainId })))
            .catch((error: unknown) =>
              deps.logger.warn('automation could not wake sending domains; the send reconciler will', { error: String(error) }),
            );
        }
        return claimed;
      }
      return {
        ownerId: input.automationId,
        concurrency: batchSize * lanes,
        async lease(seconds) {
          return (await leaseAutomation(em(), input.orgId, input.automationId, seconds)) !== null;
        },
        release: () => releaseAutomation(em(), input.orgId, input.automationId),
        ownerGone: () => Promise.resolve(ownerGoneSummary('automation deleted')),
        /**
         * `lanes` batches in flight at once, each lane claiming its next batch as soon as its last
         * committed, until a batch comes back short (nothing more is due) or CLAIM_SLICE_MS has
         * passed (the frame then heartbeats and renews the lease before the next claim).
         */
        async claim() {
          const until = Date.now() + CLAIM_SLICE_MS;
          const lane = async () => {
            let total = 0;
            for (;;) {
              const claimed = await batch();
              total += claimed;
              if (claimed < batchSize || Date.now() >= until) return total;
            }
          };
          const counts = await Promise.all(Array.from({ length: lanes }, lane));
          return { claimed: counts.reduce((a, b) => a + b, 0), items: [] };
        },
        work: () => Promise.resolve(),
        nextDue: () => nextDueRun(em(), input.orgId, input.automationId),
        state: () => automationQueueState(em(), input.orgId, input.automationId),
      };
    },
  });
}
