import type { MikroORM } from '@mikro-orm/postgresql';
import { Broadcast, Domain, Segment } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { FieldProblem } from '../../validation.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';
import { recordEvent } from '../events/events.fns.ts';
import { distinct, domainOf, scheduleProblem, ZERO_METRICS } from './broadcasts.fns.ts';
import type { CreateBroadcastInput } from './broadcasts.schemas.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';

const SCHEDULE_MESSAGES = {
  in_past: 'must be in the future',
  too_far_ahead: 'must be at most 30 days ahead',
} as const;

/**
 * Broadcast drafts of one workspace. A draft targets segments of its workspace and sends from
 * one of its domains (verified or not yet: drafts may be prepared before DNS is done; launching
 * a send will require a verified domain). Sending is not part of this service.
 */
export function createBroadcastsService({ orm, clock = () => new Date() }: { orm: MikroORM; clock?: () => Date }) {
  return {
    /** Newest first, keyset-paginated on (createdAt, id). */
    async listBroadcasts(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), Broadcast, {}, page);
    },

    /**
     * Creates a draft and its broadcast.created event in one transaction. 400 invalid_request
     * lists every business problem at once in `details.fields`: a from domain the workspace
     * does not have (`reason` DOMAIN_NOT_FOUND), segment ids that are not the workspace's
     * (`unknown_segment_ids`, reason UNKNOWN_SEGMENT), a schedule in the past or more than 30
     * days ahead (reason SCHEDULE_OUT_OF_RANGE); `reason` names the first of them.
     */
    async createBroadcast(orgId: string, input: CreateBroadcastInput): Promise<Broadcast> {
      const now = clock();
      const fromEmail = normalizeEmail(input.from_email);
      const segmentIds = distinct(input.segment_ids);
      const scheduledAt = input.scheduled_at === undefined ? null : new Date(input.scheduled_at);
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const segments = await em.find(Segment, { id: { $in: segmentIds } });
        const domain = await em.findOne(Domain, { domain: domainOf(fromEmail) });
        const known = new Set(segments.map((segment) => segment.id));
        const problems: (FieldProblem & { reason: string })[] = [];
        if (!domain) {
          problems.push({
            path: 'from_email',
            location: 'body',
            type: 'unknown_domain',
            message: `domain ${domainOf(fromEmail)} is not a domain of this workspace`,
            reason: 'DOMAIN_NOT_FOUND',
          });
        }
        input.segment_ids.forEach((id, index) => {
          if (known.has(id)) return;
          problems.push({
            path: `segment_ids.${index}`,
            location: 'body',
            type: 'unknown_segment',
            message: 'is not a segment of this workspace',
            reason: 'UNKNOWN_SEGMENT',
          });
        });
        const schedule = scheduledAt ? scheduleProblem(scheduledAt, now) : null;
        if (schedule) {
          problems.push({
            path: 'scheduled_at',
            location: 'body',
            type: schedule,
            message: SCHEDULE_MESSAGES[schedule],
            reason: 'SCHEDULE_OUT_OF_RANGE',
          });
        }
        const [first] = problems;
        if (first) {
          const unknownSegmentIds = segmentIds.filter((id) => !known.has(id));
          throw new AppError('invalid_request', `Invalid body.${first.path}: ${first.message}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}.`, {
            reason: first.reason,
            fields: problems.map(({ reason: _reason, ...field }) => field),
            ...(unknownSegmentIds.length > 0 ? { unknown_segment_ids: unknownSegmentIds } : {}),
          });
        }
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
