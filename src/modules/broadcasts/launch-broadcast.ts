import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import {
  BROADCAST_SEND_KIND,
  BROADCAST_SEND_WORKFLOW,
  broadcastSendWorkflowId,
  type BroadcastSendInput,
} from '../../../workflows/broadcasts.ts';
import { type Broadcast, Domain, Segment } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';
import { recordEvent } from '../events/events.fns.ts';
import { isSandboxCaller, type SendCaller } from '../sandbox/sandbox.fns.ts';
import { domainRefusal } from '../sends/send-checks.ts';
import { findBroadcastStream } from '../streams/streams.repo.ts';
import { BULK_TRACKING, decideTracking, trackingColumns } from '../tracking/tracking.fns.ts';
import { templateProblem } from './broadcast-message.ts';
import { domainOf, LAUNCHABLE_STATUSES, scheduleProblem } from './broadcasts.fns.ts';
import type { LaunchBroadcastInput } from './broadcasts.schemas.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';
import { lockBroadcast, type BroadcastView } from './read-broadcasts.ts';

function invalid(path: string, type: string, message: string, reason: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('invalid_request', `Invalid body.${path}: ${message}.`, {
    reason,
    fields: [{ path, location: 'body', type, message }],
    ...extra,
  });
}

/** Why a draft cannot be launched as it is (400 / 403), checked in the launch's transaction. */
async function checkLaunchable(em: EntityManager, broadcast: Broadcast): Promise<Domain> {
  if (!broadcast.html.trim() && !broadcast.plainText.trim()) {
    throw invalid('html', 'required', 'the broadcast has neither html nor plain_text', 'EMPTY_BODY');
  }
  const problem = templateProblem({ subject: broadcast.subject, html: broadcast.html, plainText: broadcast.plainText });
  if (problem) throw invalid(problem.field, 'template_syntax', `is not a valid Mustache template (${problem.message})`, 'TEMPLATE_INVALID');
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

/** The launch's schedule: the body's `scheduled_at`, else the draft's (null in the body means now); 400 outside the next 30 days. */
function launchSchedule(row: Broadcast, input: LaunchBroadcastInput, now: Date): Date | null {
  const at =
    input.scheduled_at === undefined ? (row.scheduledAt ?? null) : input.scheduled_at === null ? null : new Date(input.scheduled_at);
  const schedule = at ? scheduleProblem(at, now) : null;
  if (schedule) {
    const message =
      schedule === 'in_past' ? 'must be in the future (send with "scheduled_at": null to send now)' : 'must be at most 30 days ahead';
    throw invalid('scheduled_at', schedule, message, 'SCHEDULE_OUT_OF_RANGE');
  }
  return at;
}

/**
 * Launches a draft: now, or at `scheduled_at` (the body's, else the draft's; null in the body
 * means now), which must lie in the next 30 days. The broadcast's workflow is started inside
 * the launch's transaction, so a launch that fails to commit leaves a workflow that finds a
 * draft and ends, and one that commits always has its workflow. 409 BROADCAST_NOT_DRAFT for
 * a broadcast already launched; 503 without HERALD_ENCRYPTION_KEY (unsubscribe links are signed).
 */
export async function launchBroadcast(
  deps: { em: EntityManager; temporal: Client; config: Pick<Config, 'temporal' | 'encryptionKey'>; now: Date },
  orgId: string,
  id: string,
  input: LaunchBroadcastInput,
  caller: SendCaller,
): Promise<BroadcastView> {
  const { config, now } = deps;
  if (!config.encryptionKey) {
    throw new AppError('service_unavailable', 'Broadcasts need HERALD_ENCRYPTION_KEY: every message carries a signed unsubscribe link.', {
      reason: 'ENCRYPTION_KEY_MISSING',
    });
  }
  const broadcast = await scopeToOrg(deps.em, orgId).transactional(async (em) => {
    const row = await lockBroadcast(em, id);
    if (!LAUNCHABLE_STATUSES.includes(row.status)) {
      throw new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a draft can be launched.`, {
        reason: 'BROADCAST_NOT_DRAFT',
        status: row.status,
      });
    }
    const domain = await checkLaunchable(em, row);
    const at = launchSchedule(row, input, now);
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
    await deps.temporal.workflow.start(BROADCAST_SEND_WORKFLOW, {
      workflowId: broadcastSendWorkflowId(row.id),
      taskQueue: config.temporal.taskQueue,
      args: [workflowInput],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: workflowSearchAttributes(orgId, BROADCAST_SEND_KIND),
    });
    return row;
  });
  return { broadcast, counts: {} };
}
