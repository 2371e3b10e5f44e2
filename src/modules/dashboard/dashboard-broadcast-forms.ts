/**
 * The broadcast form's fields: read from a posted form, shown from a draft, turned into the
 * API's body, and the API's refusals turned into problems by field.
 */
import type { Broadcast } from '../../../db/entities/index.ts';
import type { ComposeFields } from './dashboard-broadcast-compose.pages.ts';
import { ID, localUtc } from './dashboard-broadcast-views.ts';
import type { Next } from 'koa';
import { form, isError, many, one, type DashboardContext } from './dashboard-kit.router.ts';

export const EMPTY: ComposeFields = {
  name: '',
  subject: '',
  preview_text: '',
  from_name: '',
  from_email: '',
  reply_to: '',
  html: '',
  plain_text: '',
  segment_ids: [],
  stream: 'broadcast',
  scheduled_at: '',
};

export function postedFields(ctx: DashboardContext): ComposeFields {
  const f = form(ctx);
  return {
    name: one(f.name),
    subject: one(f.subject),
    preview_text: one(f.preview_text),
    from_name: one(f.from_name),
    from_email: one(f.from_email),
    reply_to: one(f.reply_to),
    html: one(f.html),
    plain_text: one(f.plain_text),
    segment_ids: many(f.segment_ids).filter((id) => ID.test(id)),
    stream: one(f.stream) || 'broadcast',
    scheduled_at: one(f.scheduled_at),
  };
}

/** A draft's fields as the form shows them. */
export function fieldsOf(b: Broadcast): ComposeFields {
  return {
    name: b.name,
    subject: b.subject,
    preview_text: b.previewText,
    from_name: b.fromName,
    from_email: b.fromEmail,
    reply_to: b.replyTo ?? '',
    html: b.html,
    plain_text: b.plainText,
    segment_ids: [...b.segmentIds],
    stream: b.stream,
    scheduled_at: b.scheduledAt ? localUtc(b.scheduledAt) : '',
  };
}

/** The form's fields as the API's body: empty optional fields left out, the UTC `datetime-local` as RFC 3339. */
export function bodyOf(fields: ComposeFields) {
  const at = fields.scheduled_at.trim();
  return {
    ...fields,
    reply_to: fields.reply_to.trim() || undefined,
    scheduled_at: at === '' ? undefined : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(at) ? `${at}:00Z` : at,
  };
}

/** The refusal of a draft's fields as problems by field, or null for an error that is not about them. */
export function refusalOf(error: unknown): Record<string, string> | null {
  if (!isError(error, 'invalid_request') && !isError(error, 'unprocessable_entity')) return null;
  return problemsOf(
    (error.details?.fields as { path: string; message: string }[] | undefined) ?? [{ path: 'name', message: error.message }],
  );
}

/** Problems by field from the API's schema or the service's `details.fields` (`segment_ids.0` → `segment_ids`). */
export function problemsOf(fields: readonly { path: string; message: string }[]): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const { path, message } of fields) problems[path.split('.')[0]!] ??= message;
  return problems;
}

/** Counting the audience changes nothing: the form's one-time value is dropped so Save still works after it. */
export async function keepFormReusable(ctx: DashboardContext, next: Next): Promise<void> {
  delete (ctx.request.body as Record<string, unknown> | undefined)?._once;
  await next();
}
