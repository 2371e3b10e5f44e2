import type { ErrorCode } from '../../errors.ts';

export interface ErrorDoc {
  title: string;
  meaning: string;
  causes: string[];
  fix: string;
}

/** What each error code means, why it happens and what to do: served at /docs/api/errors/<code>. */
export const ERROR_DOCS: Record<ErrorCode, ErrorDoc> = {
  invalid_request: {
    title: 'Invalid request',
    meaning: 'The body, query parameters, path id or headers of the request are not valid.',
    causes: [
      'Malformed JSON (details.reason MALFORMED_JSON): a syntax error, or bytes that are not UTF-8; or a body that is not a JSON object.',
      'A body whose JSON shape is over a bound, refused before it is parsed: nesting deeper than 32 levels (JSON_TOO_DEEP), an object with more than 1,000 keys (JSON_TOO_MANY_KEYS), an array with more than 1,000 items (JSON_TOO_MANY_ITEMS), more than 100,000 values in the whole body (JSON_TOO_MANY_VALUES); details.limit gives the bound.',
      'Content-Type other than application/json (UNSUPPORTED_CONTENT_TYPE), or a Content-Encoding other than identity, gzip, deflate or br.',
      'A field failed validation: wrong type, out of bounds, unknown value (see error.details).',
      'An invalid pagination cursor or resource id.',
      'A template send (template_id) whose template uses a variable the request did not give (TEMPLATE_VARIABLE_MISSING; error.details.fields names each as variables.<name>), whose template is not valid Mustache (TEMPLATE_INVALID), or that renders to an empty message (EMPTY_BODY).',
      'A write request without an Idempotency-Key header, or with one shorter than 8 or longer than 128 characters.',
      'An automation definition that cannot be published (DEFINITION_INVALID, from the dashboard or `herald admin automation`): error.details.fields lists every problem with its path (`definition.steps.2.next`), such as a step that cannot be reached, a loop without a wait, a template that is not published, a sender on a domain that is not verified, or a segment of another workspace.',
    ],
    fix: 'Read error.details for the field and reason, correct the request and send it again.',
  },
  invalid_api_key: {
    title: 'Invalid API key',
    meaning: 'The request carried no usable API key.',
    causes: [
      'No Authorization header, or not in the form "Bearer <key>".',
      'The key is malformed, unknown, or has been revoked.',
      'The key was sent in the URL query string, which is always refused.',
    ],
    fix: 'Send a valid key as "Authorization: Bearer hrld_live_..." (or hrld_test_...) and never in the URL.',
  },
  payment_required: {
    title: 'Payment required',
    meaning: 'The workspace does not have enough transactional credits and overage billing is off.',
    causes: ['Each recipient (to, cc and bcc) consumes one credit.'],
    fix: 'Add credits or enable overage for the workspace, then retry.',
  },
  missing_scope: {
    title: 'Missing scope',
    meaning: 'The API key is valid but lacks the scope this operation requires.',
    causes: ['The key was created with a narrower set of scopes; error.details.required_scope names the one needed.'],
    fix: 'Use a key that holds the required scope, or create one that does.',
  },
  forbidden: {
    title: 'Forbidden',
    meaning: 'The operation is not allowed for this workspace in its current state.',
    causes: [
      'A business rule refuses it; error.details.reason says which (for example DOMAIN_NOT_READY).',
      'Creating an API key with a scope the calling key does not hold (SCOPE_NOT_HELD), a live key from a test key (MODE_NOT_HELD), an expiry later than the calling key\'s (EXPIRY_NOT_HELD) or a higher rate limit (RATE_LIMIT_NOT_HELD).',
      'An upload URL (attachment or contact import) that was altered (INVALID_SIGNATURE) or used after it expired (UPLOAD_URL_EXPIRED).',
    ],
    fix: 'Resolve the condition named in error.details.reason, then retry.',
  },
  not_found: {
    title: 'Not found',
    meaning: 'The resource does not exist, or belongs to another workspace, or no route matches the path.',
    causes: [
      'A wrong or deleted id.',
      'An id from another workspace: it behaves as non-existent.',
      'A typo in the path.',
      'A template send whose template_id is no template of the workspace (or shared with it): details.reason TEMPLATE_NOT_FOUND.',
      'GET /automations/{id}/definition for an automation that has no published definition yet: details.reason DEFINITION_NOT_PUBLISHED.',
    ],
    fix: 'Check the id and the path (all routes are under /api/v1).',
  },
  method_not_allowed: {
    title: 'Method not allowed',
    meaning: 'The path exists but does not support this HTTP method.',
    causes: ['For example DELETE on a read-only resource.'],
    fix: 'Use one of the methods listed in the Allow response header.',
  },
  conflict: {
    title: 'Conflict',
    meaning: 'The request conflicts with the current state of a resource.',
    causes: [
      'A duplicate, such as a contact email that already exists in the workspace.',
      'A request with the same Idempotency-Key is still being processed.',
      'A template send whose template is a draft or archived (details.reason TEMPLATE_NOT_PUBLISHED): only published templates are sent.',
      'A second PUT of an upload that already has its bytes: an attachment or a contact import file (ALREADY_UPLOADED).',
      'An address added to the suppression list that is already on it (details.reason ALREADY_SUPPRESSED, details.suppression_reason).',
      'A new definition published for an archived automation (details.reason AUTOMATION_ARCHIVED): move it out of archived first (PATCH /automations/{id} with a status).',
    ],
    fix: 'Fetch the current state and decide; for an in-flight idempotent request, retry after a moment.',
  },
  idempotency_conflict: {
    title: 'Idempotency conflict',
    meaning: 'The Idempotency-Key was already used with a different request.',
    causes: ['The same key was reused for another method, path or body within 24 hours.'],
    fix: 'Use a new Idempotency-Key for a new request; reuse a key only to retry the identical request.',
  },
  payload_too_large: {
    title: 'Payload too large',
    meaning: 'The request, the message or one attachment is over a size limit.',
    causes: [
      'REQUEST_TOO_LARGE: the request body is over the operation\'s limit, given in details.limit_bytes and counted after any Content-Encoding: about 36.1 MiB (37,840,720 bytes) for POST /api/v1/outbox/emails (a 25 MB message as base64 inline attachments), 1 MiB for the other operations with a body (smaller where every field is bounded: 64 KiB for segments and webhooks, 16 KiB for automations, 8 KiB for attachment uploads), 1 KiB for operations without one.',
      'MESSAGE_TOO_LARGE: body plus attachments over 25 MB.',
      'ATTACHMENT_TOO_LARGE: one attachment over 12 MB.',
      'REQUEST_TOO_LARGE on the PUT of a contact import file: the file is over 512 MiB (details.limit_bytes); split it.',
    ],
    fix: 'Send large files through POST /api/v1/outbox/attachments and reference them by attachment_id; keep other bodies under the limit in details.limit_bytes.',
  },
  unprocessable_entity: {
    title: 'Unprocessable entity',
    meaning: 'The request is well-formed but a business rule rejects it.',
    causes: ['For example a contact email that fails quality validation (error.details.reason).'],
    fix: 'Read error.details.reason and correct the data.',
  },
  rate_limited: {
    title: 'Rate limited',
    meaning: 'The API key has used up its request budget for now.',
    causes: ['Too many requests in a short time for the key\'s rate-limit profile (see GET /api/v1/me).'],
    fix: 'Wait the number of seconds in the Retry-After header, then retry with backoff.',
  },
  internal_error: {
    title: 'Internal error',
    meaning: 'Something failed on Herald\'s side.',
    causes: ['An unexpected server error; it has been logged with the request id.'],
    fix: 'Retry with backoff; if it persists, contact support with meta.request_id.',
  },
  bad_gateway: {
    title: 'Bad gateway',
    meaning: 'The delivery provider rejected the message outright.',
    causes: ['The relay refused the message; credits and domain quota were released.'],
    fix: 'It is safe to retry; check the message content if it keeps failing.',
  },
  service_unavailable: {
    title: 'Service unavailable',
    meaning: 'A dependency this operation needs is not configured or not reachable.',
    causes: [
      'For example secret encryption or attachment storage is not configured on this server.',
      'A contact import whose upload URL cannot be signed or whose workflow cannot be started (IMPORT_UNAVAILABLE): the same upload URL works again once Temporal answers.',
      'The database is restarting or unreachable (DATABASE_UNAVAILABLE): any request may get it, with Retry-After; writes sent with an Idempotency-Key are safe to retry.',
    ],
    fix: 'Retry later; operators should check the server configuration.',
  },
  webhook_signature_invalid: {
    title: 'Webhook signature invalid',
    meaning: 'A webhook delivery\'s signature is missing, expired or does not match.',
    causes: [
      'The raw body was changed (for example re-serialised JSON) before verification.',
      'The wrong signing secret, or a timestamp outside the tolerance window.',
    ],
    fix: 'Verify the Herald-Signature header against the raw request body with the endpoint\'s signing secret.',
  },
};
