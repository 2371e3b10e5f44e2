/**
 * The checks a broadcast draft's fields pass when it is created or changed: its from domain is
 * one of the workspace's, its segments are the workspace's, its schedule lies in the next 30
 * days (400 invalid_request listing every problem at once), and its stream is a broadcast-kind
 * stream of the workspace (422). `em` is scoped to the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { Domain, Segment } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import type { FieldProblem } from '../../validation.ts';
import { findBroadcastStream } from '../streams/streams.repo.ts';
import { distinct, domainOf, scheduleProblem } from './broadcasts.fns.ts';

const SCHEDULE_MESSAGES = {
  in_past: 'must be in the future',
  too_far_ahead: 'must be at most 30 days ahead',
} as const;

/** The fields of a draft being checked; absent ones are not looked at. */
export interface DraftFields {
  fromEmail?: string | undefined;
  /** As given (indexes name the problems), possibly with repeats. */
  segmentIds?: readonly string[] | undefined;
  scheduledAt?: Date | null | undefined;
  stream?: string | undefined;
}

/** Throws the refusal of `fields` (400 with every problem, else 422 for the stream); returns the stream name to store. */
export async function checkDraftFields(em: EntityManager, fields: DraftFields, now: Date): Promise<string | undefined> {
  const problems: (FieldProblem & { reason: string })[] = [];
  if (fields.fromEmail !== undefined && !(await em.findOne(Domain, { domain: domainOf(fields.fromEmail) }))) {
    problems.push({
      path: 'from_email',
      location: 'body',
      type: 'unknown_domain',
      message: `domain ${domainOf(fields.fromEmail)} is not a domain of this workspace`,
      reason: 'DOMAIN_NOT_FOUND',
    });
  }
  const segmentIds = fields.segmentIds ?? [];
  const known = new Set(
    segmentIds.length > 0 ? (await em.find(Segment, { id: { $in: distinct(segmentIds) } })).map((segment) => segment.id) : [],
  );
  segmentIds.forEach((id, index) => {
    if (known.has(id)) return;
    problems.push({
      path: `segment_ids.${index}`,
      location: 'body',
      type: 'unknown_segment',
      message: 'is not a segment of this workspace',
      reason: 'UNKNOWN_SEGMENT',
    });
  });
  const schedule = fields.scheduledAt ? scheduleProblem(fields.scheduledAt, now) : null;
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
    const unknownSegmentIds = distinct(segmentIds).filter((id) => !known.has(id));
    throw new AppError(
      'invalid_request',
      `Invalid body.${first.path}: ${first.message}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}.`,
      {
        reason: first.reason,
        fields: problems.map(({ reason: _reason, ...field }) => field),
        ...(unknownSegmentIds.length > 0 ? { unknown_segment_ids: unknownSegmentIds } : {}),
      },
    );
  }
  return fields.stream === undefined ? undefined : (await findBroadcastStream(em, fields.stream, 'stream')).name;
}
