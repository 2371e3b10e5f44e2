import { createHash } from 'node:crypto';
import { AppError } from '../../errors.ts';
import { requestFingerprint } from '../../canonical-json.ts';
import { parseInput } from '../../validation.ts';
import type { IdempotencyStore } from '../idempotency/idempotency.store.ts';
import { SendEmailBody, sendBodyErrorReason } from './sends.schemas.ts';
import { serializeEmail } from './sends.serializer.ts';
import type { AcceptedEmail, SendsService } from './sends.service.ts';
import type { SendCaller } from '../sandbox/sandbox.fns.ts';

/** Messages per POST /outbox/emails/batch. */
export const BATCH_MAX = 100;

/** One message's outcome in a batch: the email record (202) or the error it would have had alone. */
export type BatchItemResult =
  | { index: number; status: 202; email: ReturnType<typeof serializeEmail> }
  | { index: number; status: number; error: { code: string; message: string; details?: Record<string, unknown> } };

export interface BatchRequest {
  orgId: string;
  caller: SendCaller;
  /** The batch's Idempotency-Key: each message is then idempotent on its own (see itemKey). */
  idempotencyKey?: string | undefined;
  emails: readonly unknown[];
}

/**
 * The idempotency key of message `index` of a batch sent with `key`. It starts with a line
 * break, which no Idempotency-Key header can hold, so it never meets a key a client chose.
 */
function itemKey(key: string, index: number): string {
  return `\nbatch:${createHash('sha256').update(key).digest('hex').slice(0, 40)}:${index}`;
}

function errorOf(index: number, error: AppError): BatchItemResult {
  return {
    index,
    status: error.status,
    error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
  };
}

/** Field paths of a message's validation problems, as paths of the batch body (`emails.3.to`). */
function inBatch(index: number, error: AppError): AppError {
  const fields = (error.details?.fields as { path: string }[] | undefined)?.map((field) => ({
    ...field,
    path: `emails.${index}${field.path ? `.${field.path}` : ''}`,
  }));
  return fields
    ? new AppError(error.code, error.message.replace('Invalid body.', `Invalid body.emails.${index}.`), { ...error.details, fields })
    : error;
}

/**
 * POST /outbox/emails/batch: each message is validated and accepted (or refused) on its own,
 * in order, exactly as POST /outbox/emails would (credits, domain, suppression, template);
 * one refusal does not stop the others. With an Idempotency-Key each message also keeps its
 * own idempotent answer, committed with its email: if the server dies mid-batch, the retry
 * (once the batch's key is free again) replays the messages already accepted and sends only
 * the rest. An error that is not a refusal (the database is down) stops the batch: the
 * caller answers 5xx and the client retries it.
 */
export function createBatchSender(deps: { sends: SendsService; idempotency: IdempotencyStore }) {
  async function sendOne(request: BatchRequest, index: number, raw: unknown): Promise<BatchItemResult> {
    const input = await parseInput(SendEmailBody, raw, 'body', sendBodyErrorReason);
    const answer = (accepted: AcceptedEmail): BatchItemResult => ({
      index,
      status: 202,
      email: serializeEmail(accepted.email, accepted.recipients),
    });
    if (!request.idempotencyKey) return answer(await deps.sends.sendEmail(request.orgId, request.caller, input));
    const scope = {
      orgId: request.orgId,
      apiKeyId: request.caller.keyId ?? '',
      key: itemKey(request.idempotencyKey, index),
      fingerprint: requestFingerprint('POST', '/outbox/emails', raw),
    };
    const begun = await deps.idempotency.begin(scope);
    if (begun.kind === 'replay') return begun.body as BatchItemResult;
    if (begun.kind !== 'started') throw new AppError('conflict', `Message ${index} of this batch is still being processed; retry shortly.`);
    let stored = false;
    try {
      const accepted = await deps.sends.sendEmail(request.orgId, request.caller, input, {
        answer: { cte: (email) => deps.idempotency.answerCte(begun.recordId, 202, answer(email)), stored: () => (stored = true) },
      });
      // Not stored with the email when the opt-in hand-off wait could still have refused it.
      if (!stored) await deps.idempotency.complete(begun.recordId, 202, answer(accepted));
      return answer(accepted);
    } catch (error) {
      if (stored) throw error;
      if (error instanceof AppError && error.status < 500)
        await deps.idempotency.complete(begun.recordId, error.status, errorOf(index, inBatch(index, error)));
      else await deps.idempotency.abandon(begun.recordId);
      throw error;
    }
  }

  return {
    async send(request: BatchRequest): Promise<BatchItemResult[]> {
      const results: BatchItemResult[] = [];
      for (const [index, raw] of request.emails.entries()) {
        try {
          results.push(await sendOne(request, index, raw));
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          results.push(errorOf(index, inBatch(index, error)));
        }
      }
      return results;
    },
  };
}

export type BatchSender = ReturnType<typeof createBatchSender>;
