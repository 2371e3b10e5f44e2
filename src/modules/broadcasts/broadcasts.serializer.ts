import type { Broadcast } from '../../../db/entities/index.ts';
import { completeMetrics } from './broadcasts.fns.ts';

/** The spec's Broadcast (camelCase); `groupIds` are the segment ids it targets. */
export function serializeBroadcast(broadcast: Broadcast) {
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
    metrics: completeMetrics(broadcast.metrics),
    createdAt: broadcast.createdAt.toISOString(),
  };
}
