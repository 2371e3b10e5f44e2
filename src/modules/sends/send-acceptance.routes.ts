import { defineRoute } from '../../http/route.ts';
import { BATCH_MAX, type BatchSender } from './batch.ts';
import {
  BatchBody,
  BatchResponse,
  SEND_REQUEST_BYTES_MAX,
  SendEmailBody,
  sendBodyErrorReason,
  TransactionalEmailResponse,
} from './sends.schemas.ts';
import { serializeEmail } from './sends.serializer.ts';
import type { AcceptanceAnswer, SendsService } from './sends.service.ts';

/**
 * POST /outbox/emails (spec) and POST /outbox/emails/batch (Herald extension): 202 means
 * accepted for delivery; the batch answers one result per message.
 */
export function sendAcceptanceRoutes(deps: { sends: Pick<SendsService, 'sendEmail'>; batch: BatchSender }) {
  return [
    defineRoute({
      operationId: 'sendEmail',
      method: 'POST',
      path: '/outbox/emails',
      summary: 'Send a transactional email',
      description: [
        "Consumes one transactional credit per recipient (to + cc + bcc, each address once) and counts against the sending domain's daily warm-up cap.",
        '`scheduled_at` takes ISO 8601 (UTC unless an offset is given) or natural language in UTC ("in 2 hours", "tomorrow at 9am", "friday 15:00 UTC"); up to 30 days ahead; a time up to a minute in the past means now.',
        "Herald extension: `template_id` (a published template) with `variables` renders the template's subject and html with Mustache (`{{name}}` HTML-escaped in the html, `{{{name}}}` raw; subject and text plain); `subject` and `text`, when given, are rendered with the same variables. `html` is not allowed with `template_id`.",
        '400 details.reason: INVALID_FROM, NO_RECIPIENTS, TOO_MANY_RECIPIENTS, EMPTY_BODY, TOO_MANY_ATTACHMENTS, INVALID_ATTACHMENT, TEMPLATE_VARIABLE_MISSING, TEMPLATE_INVALID. 402 credits short (overage off). 404 TEMPLATE_NOT_FOUND. 409 TEMPLATE_NOT_PUBLISHED.',
        '403 details.reason: DOMAIN_NOT_FOUND, DOMAIN_NOT_READY, DOMAIN_ATTENTION, DOMAIN_REPUTATION_RECOVERY, RECIPIENT_SUPPRESSED. 404 INVALID_ATTACHMENT (unknown or unfinished attachment_id).',
        '413 details.reason: ATTACHMENT_TOO_LARGE (one file over 12 MB decoded), MESSAGE_TOO_LARGE (bodies plus attachments over 25 MB), REQUEST_TOO_LARGE.',
        "429 details.reason DAILY_CAP_REACHED when the domain's warm-up cap for that UTC day is used up (Retry-After: seconds to the next UTC day). 502 PROVIDER_REJECTED.",
        "Herald extension: `stream` names the message stream (default `transactional`; GET /streams). The recipients' suppression is checked for that stream (an unsubscribe from broadcast mail does not block it); 422 details.reason UNKNOWN_STREAM when the workspace has no such stream; 429 details.reason STREAM_BUDGET_REACHED past the stream's daily budget.",
      ].join('\n\n'),
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      body: SendEmailBody,
      bodyLimit: SEND_REQUEST_BYTES_MAX,
      bodyErrorReason: sendBodyErrorReason,
      claimInTransaction: true,
      errors: [
        'payment_required',
        'forbidden',
        'not_found',
        'conflict',
        'payload_too_large',
        'unprocessable_entity',
        'rate_limited',
        'bad_gateway',
        'service_unavailable',
      ],
      response: { status: 202, description: 'Accepted for delivery: the transactional email record', schema: TransactionalEmailResponse },
      handle: async ({ caller, body, idempotentAnswer }) => {
        // The idempotent answer commits with the email: a crash between the two cannot leave a
        // key whose retry would send the email again.
        const answer: AcceptanceAnswer | undefined = idempotentAnswer && {
          cte: (accepted) => idempotentAnswer.cte(202, serializeEmail(accepted.email, accepted.recipients)),
          answer: (accepted) => idempotentAnswer.answer(202, serializeEmail(accepted.email, accepted.recipients)),
          stored: () => idempotentAnswer.stored(),
          ...(idempotentAnswer.claim ? { claim: idempotentAnswer.claim } : {}),
        };
        const { email, recipients } = await deps.sends.sendEmail(caller.orgId, caller, body, answer ? { answer } : {});
        return { status: 202, data: serializeEmail(email, recipients) };
      },
    }),
    defineRoute({
      operationId: 'sendEmailBatch',
      method: 'POST',
      path: '/outbox/emails/batch',
      summary: 'Send up to 100 transactional emails in one request',
      description: [
        `\`emails\`: 1 to ${BATCH_MAX} messages, each exactly a POST /outbox/emails body. Each is validated and accepted or refused on its own, in order; one refusal does not stop the others.`,
        'The answer (200) lists one result per message: `status` 202 with the `email` record, or the status and `error` (code, message, details with field paths under `emails.<index>`) that message would have had alone. `accepted` and `refused` count them.',
        "With an Idempotency-Key (one for the batch) each message keeps its own idempotent answer, committed with its email: a retry after a failure mid-batch sends only what was not accepted. The request body is limited as one send's.",
      ].join('\n\n'),
      tag: 'Outbox',
      scope: 'outbox.transactional:send',
      extension: true,
      body: BatchBody,
      bodyLimit: SEND_REQUEST_BYTES_MAX,
      errors: ['service_unavailable'],
      response: { status: 200, description: 'One result per message, in order', schema: BatchResponse },
      handle: async ({ caller, body, idempotencyKey }) => {
        const results = await deps.batch.send({ orgId: caller.orgId, caller, idempotencyKey, emails: body.emails });
        const accepted = results.filter((result) => result.status === 202).length;
        return { status: 200, data: { accepted, refused: results.length - accepted, results } };
      },
    }),
  ];
}
