import type { EntityManager } from '@mikro-orm/postgresql';
import { Broadcast } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';
import { recordEvent } from '../events/events.fns.ts';
import { checkDraftFields } from './broadcast-drafts.ts';
import { distinct, ZERO_METRICS } from './broadcasts.fns.ts';
import type { CreateBroadcastInput, UpdateBroadcastInput } from './broadcasts.schemas.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';
import { lockBroadcast } from './read-broadcasts.ts';

const notDraft = (row: Broadcast, verb: string) =>
  new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a draft can be ${verb}.`, {
    reason: 'BROADCAST_NOT_DRAFT',
    status: row.status,
  });

/**
 * Creates a draft and its broadcast.created event in one transaction. 400 invalid_request
 * lists every business problem at once in `details.fields`: a from domain the workspace
 * does not have (`reason` DOMAIN_NOT_FOUND), segment ids that are not the workspace's
 * (`unknown_segment_ids`, reason UNKNOWN_SEGMENT), a schedule in the past or more than 30
 * days ahead (reason SCHEDULE_OUT_OF_RANGE); `reason` names the first of them. A `stream`
 * the workspace has not (422 UNKNOWN_STREAM) or of the transactional kind (422
 * STREAM_NOT_BROADCAST) is refused after those.
 */
export async function createBroadcast(rootEm: EntityManager, now: Date, orgId: string, input: CreateBroadcastInput): Promise<Broadcast> {
  const fromEmail = normalizeEmail(input.from_email);
  const segmentIds = distinct(input.segment_ids);
  const scheduledAt = input.scheduled_at === undefined ? null : new Date(input.scheduled_at);
  return scopeToOrg(rootEm, orgId).transactional(async (em) => {
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
}

/**
 * Changes a draft (Herald extension): the fields given, checked as on create (400 with every
 * problem, 422 for the stream); `reply_to` or `scheduled_at` null clears them. 409
 * BROADCAST_NOT_DRAFT once it is launched: its messages are being or were written from it.
 */
export async function updateBroadcast(
  rootEm: EntityManager,
  now: Date,
  orgId: string,
  id: string,
  input: UpdateBroadcastInput,
): Promise<Broadcast> {
  return scopeToOrg(rootEm, orgId).transactional(async (em) => {
    const row = await lockBroadcast(em, id);
    if (row.status !== 'draft') throw notDraft(row, 'changed');
    const fromEmail = input.from_email === undefined ? undefined : normalizeEmail(input.from_email);
    const scheduledAt = input.scheduled_at === undefined ? undefined : input.scheduled_at === null ? null : new Date(input.scheduled_at);
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
}

/** Deletes a draft (Herald extension); 409 BROADCAST_NOT_DRAFT once launched (its messages and counters refer to it). */
export async function deleteBroadcast(rootEm: EntityManager, orgId: string, id: string): Promise<{ _id: string; deleted: true }> {
  return scopeToOrg(rootEm, orgId).transactional(async (em) => {
    const row = await lockBroadcast(em, id);
    if (row.status !== 'draft') throw notDraft(row, 'deleted');
    em.remove(row);
    await em.flush();
    return { _id: row.id, deleted: true as const };
  });
}
