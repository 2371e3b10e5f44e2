import type { Suppression, SuppressionChange, SuppressionReason } from '../../../db/entities/index.ts';
import type { SuppressionApiReason } from './suppressions.schemas.ts';

/** The stored reason as the API names it. */
export const apiReason = (reason: SuppressionReason): SuppressionApiReason => (reason === 'hard_bounce' ? 'bounce' : reason);
/** The API's reason as stored. */
export const storedReason = (reason: SuppressionApiReason): SuppressionReason => (reason === 'bounce' ? 'hard_bounce' : reason);

/** A stored scope as the API shows it: '' (every stream) is null. */
export const apiStream = (stream: string): string | null => stream || null;

export function serializeSuppression(entry: Pick<Suppression, 'email' | 'reason' | 'emailId' | 'detail' | 'stream' | 'createdAt'>) {
  return {
    email: entry.email,
    reason: apiReason(entry.reason),
    email_id: entry.emailId ?? null,
    detail: entry.detail ?? null,
    stream: apiStream(entry.stream),
    created_at: entry.createdAt.toISOString(),
  };
}

export function serializeSuppressionChange(change: SuppressionChange) {
  return {
    _id: change.id,
    email: change.email,
    action: change.action,
    reason: apiReason(change.reason),
    api_key_id: change.apiKeyId ?? null,
    email_id: change.emailId ?? null,
    detail: change.detail ?? null,
    stream: apiStream(change.stream),
    created_at: change.createdAt.toISOString(),
  };
}
