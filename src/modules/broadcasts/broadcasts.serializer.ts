import type { Broadcast } from '../../../db/entities/index.ts';
import { completeMetrics } from './broadcasts.fns.ts';

/**
 * The spec's Broadcast (camelCase); `groupIds` are the segment ids it targets, `metrics` the
 * messages queued and their event counts (`counts`, from the daily rollup; zeros when not given).
 * The spec's fields and one Herald extension, `stream` (why a broadcast failed is in its
 * broadcast.failed event).
 */
export function serializeBroadcast(broadcast: Broadcast, counts?: Record<string, number>) {
  return {
    _id: broadcast.id,
    name: broadcast.name,
    subject: broadcast.subject,
    previewText: broadcast.previewText,
    fromName: broadcast.fromName,
    fromEmail: broadcast.fromEmail,
    groupIds: broadcast.segmentIds,
    status: broadcast.status,
    scheduledAt: broadcast.scheduledAt ? broadcast.scheduledAt.toISOString() : null,
    metrics: completeMetrics(broadcast.recipientCount ?? 0, counts),
    createdAt: broadcast.createdAt.toISOString(),
    stream: broadcast.stream,
  };
}
