import { LockMode, type EntityManager, type MikroORM } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import {
  BROADCAST_SEND_KIND,
  BROADCAST_SEND_WORKFLOW,
  broadcastChangedSignal,
  broadcastSendWorkflowId,
  type BroadcastSendInput,
} from '../../../workflows/broadcasts.ts';
import { Broadcast, Domain, Segment } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';
import { recordEvent } from '../events/events.fns.ts';
import { domainRefusal } from '../sends/send-checks.ts';
import { templateProblem } from './broadcast-message.ts';
import { BULK_TRACKING, decideTracking, trackingColumns } from '../tracking/tracking.fns.ts';
import { countAudience, countBroadcastEvents } from './broadcast-send.repo.ts';
import { CANCELLABLE_STATUSES, distinct, domainOf, LAUNCHABLE_STATUSES, scheduleProblem, ZERO_METRICS } from './broadcasts.fns.ts';
import type { CreateBroadcastInput, LaunchBroadcastInput, UpdateBroadcastInput } from './broadcasts.schemas.ts';
import { checkDraftFields } from './broadcast-drafts.ts';
import { findBroadcastStream } from '../streams/streams.repo.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';
import { isSandboxCaller, type SendCaller } from '../sandbox/sandbox.fns.ts';

/** A broadcast with its event counters (GET answers carry live metrics). */
export interface BroadcastView {
  broadcast: Broadcast;
  counts: Record<string, number>;
}

const broadcastNotFound = (id: string) => new AppError('not_found', `Broadcast ${id} does not exist.`);

const notDraft = (row: Broadcast, verb: string) =>
  new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a draft can be ${verb}.`, {
    reason: 'BROADCAST_NOT_DRAFT',
    status: row.status,
  });

function invalid(path: string, type: string, message: string, reason: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('invalid_request', `Invalid body.${path}: ${message}.`, {
    reason,
    fields: [{ path, location: 'body', type, message }],
    ...extra,
  });
}

/**
 * Broadcasts of one workspace: drafts, then their launch and cancel. A draft targets segments of
 * its workspace and sends from one of its domains (verified or not yet: drafts may be prepared
 * before DNS is done); launching requires the domain verified and not paused, and hands the
 * broadcast to its workflow (`broadcast:<id>`, workflows/broadcasts.ts), which queues the
 * audience on the domain's actor. States: draft → scheduled → sending → sent, or cancelled
 * (by the caller) or failed (by Herald).
 */
export function createBroadcastsService({
  orm,
  temporal,
  config,
  logger,
  clock = () => new Date(),
}: {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal' | 'encryptionKey'>;
  logger: Logger;
  clock?: () => Date;
}) {
  async function withCounts(em: EntityManager, orgId: string, broadcasts: Broadcast[]): Promise<BroadcastView[]> {
    const counts = await countBroadcastEvents(
      em,
      orgId,
      broadcasts.filter((b) => b.status !== 'draft').map((b) => b.id),
    );
    return broadcasts.map((broadcast) => ({ broadcast, counts: counts.get(broadcast.id) ?? {} }));
  }

  async function lockBroadcast(em: EntityManager, id: string): Promise<Broadcast> {
    const broadcast = await em.findOne(Broadcast, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!broadcast) throw broadcastNotFound(id);
    return broadcast;
  }

  /** Why a draft cannot be launched as it is (400 / 403), checked in the launch's transaction. */
  async function checkLaunchable(em: EntityManager, broadcast: Broadcast): Promise<Domain> {
    if (!broadcast.html.trim() && !broadcast.plainText.trim()) {
      throw invalid('html', 'required', 'the broadcast has neither html nor plain_text', 'EMPTY_BODY');
    }
    const problem = templateProblem({ subject: broadcast.subject, html: broadcast.html, plainText: broadcast.plainText });
    if (problem)
      throw invalid(problem.field, 'template_syntax', `is not a valid Mustache template (${problem.message})`, 'TEMPLATE_INVALID');
    const segments = await em.find(Segment, { id: { $in: broadcast.segmentIds } });
    const known = new Set(segments.map((segment) => segment.id));
    const unknown = broadcast.segmentIds.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      throw invalid('segment_ids', 'unknown_segment', 'names segments deleted since the draft was made', 'UNKNOWN_SEGMENT', {
        unknown_segment_ids: unknown,
      });
    }
    const host = domainOf(broadcast.fromEmail);
    const domain = await em.findOne(Domain, { domain: host });
    if (!domain)
      throw new AppError('forbidden', `${host} is not a sending domain of this workspace.`, { reason: 'DOMAIN_NOT_FOUND', domain: host });
    const refusal = domainRefusal(domain, host);
    if (refusal) throw refusal;
    await findBroadcastStream(em, broadcast.stream, 'stream');
    return domain;
  }

  return {
    /** Newest first, keyset-paginated on (createdAt, id), with each one's live counters. */
    async listBroadcasts(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
    ): Promise<KeysetPage<Broadcast> & { counts: Map<string, Record<string, number>> }> {
      const em = scopeToOrg(orm.em, orgId);
      const found = await findKeysetPage(em, Broadcast, {}, page);
      const views = await withCounts(em, orgId, found.items);
      return { ...found, counts: new Map(views.map((view) => [view.broadcast.id, view.counts])) };
    },

    /** One broadcast with its live counters; 404 for another workspace's. */
    async getBroadcast(orgId: string, id: string): Promise<BroadcastView> {
      const em = scopeToOrg(orm.em, orgId);
      const broadcast = await em.findOne(Broadcast, { id: id.toLowerCase() });
      if (!broadcast) throw broadcastNotFound(id);
      const [view] = await withCounts(em, orgId, [broadcast]);
      return view!;
    },

    /**
     * How many contacts of the workspace a broadcast to `segmentIds` would reach if sent now
     * (active, not suppressed for every stream or for `stream`, one message per contact; ids of
     * other workspaces count nothing).
     * The send takes its audience again at its send time, so this is a forecast.
     */
    async countAudience(orgId: string, segmentIds: readonly string[], stream = 'broadcast'): Promise<number> {
      return countAudience(scopeToOrg(orm.em, orgId), orgId, distinct(segmentIds), clock(), stream);
    },

    /**
     * Launches a draft: now, or at `scheduled_at` (the body's, else the draft's; null in the body
     * means now), which must lie in the next 30 days. The broadcast's workflow is started inside
     * the launch's transaction, so a launch that fails to commit leaves a workflow that finds a
     * draft and ends, and one that commits always has its workflow. 409 BROADCAST_NOT_DRAFT for
     * a broadcast already launched; 503 without HERALD_ENCRYPTION_KEY (unsubscribe links are signed).
     */
    async launchBroadcast(orgId: string, id: string, input: LaunchBroadcastInput, caller: SendCaller): Promise<BroadcastView> {
      if (!config.encryptionKey) {
        throw new AppError(
          'service_unavailable',
          'Broadcasts need HERALD_ENCRYPTION_KEY: every message carries a signed unsubscribe link.',
          { reason: 'ENCRYPTION_KEY_MISSING' },
        );
      }
      const now = clock();
      const broadcast = await scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const row = await lockBroadcast(em, id);
        if (!LAUNCHABLE_STATUSES.includes(row.status)) {
          throw new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a draft can be launched.`, {
            reason: 'BROADCAST_NOT_DRAFT',
            status: row.status,
          });
        }
        const domain = await checkLaunchable(em, row);
        const at =
          input.scheduled_at === undefined ? (row.scheduledAt ?? null) : input.scheduled_at === null ? null : new Date(input.scheduled_at);
        const schedule = at ? scheduleProblem(at, now) : null;
        if (schedule) {
          const message =
            schedule === 'in_past' ? 'must be in the future (send with "scheduled_at": null to send now)' : 'must be at most 30 days ahead';
          throw invalid('scheduled_at', schedule, message, 'SCHEDULE_OUT_OF_RANGE');
        }
        Object.assign(row, {
          domainId: domain.id,
          launchedAt: now,
          scheduledAt: at,
          status: at ? 'scheduled' : 'sending',
          sendingAt: at ? null : now,
          ...trackingColumns(decideTracking(input.tracking, BULK_TRACKING)),
          sandbox: isSandboxCaller(caller),
        });
        await em.flush();
        recordEvent(em, orgId, at ? 'broadcast.scheduled' : 'broadcast.sending', { broadcast: serializeBroadcast(row) });
        const workflowInput: BroadcastSendInput = { orgId, broadcastId: row.id };
        await temporal.workflow.start(BROADCAST_SEND_WORKFLOW, {
          workflowId: broadcastSendWorkflowId(row.id),
          taskQueue: config.temporal.taskQueue,
          args: [workflowInput],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          typedSearchAttributes: workflowSearchAttributes(orgId, BROADCAST_SEND_KIND),
        });
        return row;
      });
      return { broadcast, counts: {} };
    },

    /**
     * Cancels a scheduled or sending broadcast: from the commit on, no message of it is handed
     * off that was not already on its way (the drain skips them; the workflow cancels the
     * queued ones in pages). 409 BROADCAST_NOT_CANCELLABLE for a draft or a finished broadcast.
     */
    async cancelBroadcast(orgId: string, id: string): Promise<BroadcastView> {
      const em = scopeToOrg(orm.em, orgId);
      const broadcast = await em.transactional(async (tx) => {
        const row = await lockBroadcast(tx, id);
        if (!CANCELLABLE_STATUSES.includes(row.status)) {
          throw new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a scheduled or sending broadcast can be cancelled.`, {
            reason: 'BROADCAST_NOT_CANCELLABLE',
            status: row.status,
          });
        }
        row.status = 'cancelled';
        row.cancelledAt = clock();
        await tx.flush();
        recordEvent(tx, orgId, 'broadcast.cancelled', { broadcast: serializeBroadcast(row) });
        return row;
      });
      try {
        await temporal.workflow.getHandle(broadcastSendWorkflowId(broadcast.id)).signal(broadcastChangedSignal);
      } catch (error) {
        // The workflow looks at the row on its own within seconds (or at its scheduled time).
        logger.warn('broadcast workflow not signalled after cancel', { broadcastId: broadcast.id, error });
      }
      const [view] = await withCounts(em, orgId, [broadcast]);
      return view!;
    },

    /**
     * Changes a draft (Herald extension): the fields given, checked as on create (400 with every
     * problem, 422 for the stream); `reply_to` or `scheduled_at` null clears them. 409
     * BROADCAST_NOT_DRAFT once it is launched: its messages are being or were written from it.
     */
    async updateBroadcast(orgId: string, id: string, input: UpdateBroadcastInput): Promise<Broadcast> {
      const now = clock();
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const row = await lockBroadcast(em, id);
        if (row.status !== 'draft') throw notDraft(row, 'changed');
        const fromEmail = input.from_email === undefined ? undefined : normalizeEmail(input.from_email);
        const scheduledAt =
          input.scheduled_at === undefined ? undefined : input.scheduled_at === null ? null : new Date(input.scheduled_at);
        const stream = await checkDraftFields(em, { fromEmail, segmentIds: input.segment_ids, scheduledAt, stream: input.stream }, now);
        const changes: Partial<Broadcast> = {
          name: input.name,
          subject: input.subject,
          previewText: input.preview_text,
          fromName: input.from_name,
          fromEmail,
          replyTo: input.reply_to === undefined ? undefined : input.reply_to === null ? null : normalizeEmail(input.reply_to),
          segmentIds: input.segment_ids && distinct(input.segment_ids),
          html: input.html,
          plainText: input.plain_text,
          scheduledAt,
          stream,
        };
        for (const [key, value] of Object.entries(changes)) if (value !== undefined) Object.assign(row, { [key]: value });
        await em.flush();
        return row;
      });
    },

    /** Deletes a draft (Herald extension); 409 BROADCAST_NOT_DRAFT once launched (its messages and counters refer to it). */
    async deleteBroadcast(orgId: string, id: string): Promise<{ _id: string; deleted: true }> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const row = await lockBroadcast(em, id);
        if (row.status !== 'draft') throw notDraft(row, 'deleted');
        em.remove(row);
        await em.flush();
        return { _id: row.id, deleted: true as const };
      });
    },

    /**
     * Creates a draft and its broadcast.created event in one transaction. 400 invalid_request
     * lists every business problem at once in `details.fields`: a from domain the workspace
     * does not have (`reason` DOMAIN_NOT_FOUND), segment ids that are not the workspace's
     * (`unknown_segment_ids`, reason UNKNOWN_SEGMENT), a schedule in the past or more than 30
     * days ahead (reason SCHEDULE_OUT_OF_RANGE); `reason` names the first of them. A `stream`
     * the workspace has not (422 UNKNOWN_STREAM) or of the transactional kind (422
     * STREAM_NOT_BROADCAST) is refused after those.
     */
    async createBroadcast(orgId: string, input: CreateBroadcastInput): Promise<Broadcast> {
      const now = clock();
      const fromEmail = normalizeEmail(input.from_email);
      const segmentIds = distinct(input.segment_ids);
      const scheduledAt = input.scheduled_at === undefined ? null : new Date(input.scheduled_at);
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const stream = await checkDraftFields(em, { fromEmail, segmentIds: input.segment_ids, scheduledAt, stream: input.stream }, now);
        const broadcast = em.create(Broadcast, {
          orgId,
          name: input.name,
          subject: input.subject,
          previewText: input.preview_text,
          fromName: input.from_name,
          fromEmail,
          replyTo: input.reply_to === undefined ? null : normalizeEmail(input.reply_to),
          segmentIds,
          html: input.html,
          plainText: input.plain_text,
          status: 'draft',
          scheduledAt,
          stream: stream ?? 'broadcast',
          metrics: { ...ZERO_METRICS },
        });
        await em.flush();
        recordEvent(em, orgId, 'broadcast.created', { broadcast: serializeBroadcast(broadcast) });
        return broadcast;
      });
    },
  };
}

export type BroadcastsService = ReturnType<typeof createBroadcastsService>;
