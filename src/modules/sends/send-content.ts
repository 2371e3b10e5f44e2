import { AppError } from '../../errors.ts';
import type { TemplatesService } from '../templates/templates.service.ts';
import { SEND_LIMITS, type SendEmailInput } from './sends.schemas.ts';
import { renderTemplate } from './template-render.ts';

/** What a send delivers: subject and bodies, from the request or rendered from a stored template. */
export interface SendContent {
  subject: string;
  html: string | null;
  text: string | null;
  template: { id: string; version: number } | null;
}

const field = (path: string, type: string, message: string) => ({ path, location: 'body', type, message });

/**
 * The subject and bodies of a send. With `template_id`: the workspace's (or a shared) template,
 * which must be published, rendered with `variables` (template-render.ts); the request's
 * `subject` and `text`, when given, are rendered with the same variables and take the place of
 * the template's subject / add a text body. The rendered parts are held to the request's bounds.
 */
export async function resolveSendContent(
  templates: Pick<TemplatesService, 'getTemplate'>,
  orgId: string,
  input: SendEmailInput,
): Promise<SendContent> {
  if (input.template_id === undefined) {
    return { subject: input.subject ?? '', html: input.html ?? null, text: input.text ?? null, template: null };
  }
  const id = input.template_id;
  const template = await templates.getTemplate(orgId, id).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') {
      throw new AppError('not_found', `Template ${id} does not exist in this workspace.`, {
        reason: 'TEMPLATE_NOT_FOUND',
        fields: [field('template_id', 'not_found', 'no such template')],
      });
    }
    throw error;
  });
  if (template.status !== 'published') {
    throw new AppError('conflict', `Template ${id} is ${template.status}: only a published template can be sent.`, {
      reason: 'TEMPLATE_NOT_PUBLISHED',
      status: template.status,
    });
  }
  const rendered = renderTemplate(
    { subject: input.subject ?? template.subject, html: template.html, text: input.text },
    input.variables ?? {},
  );
  const problems = [
    ...(rendered.subject.length === 0 ? [field('subject', 'min_length', 'is empty (the template has no subject; give one)')] : []),
    ...(rendered.subject.length > SEND_LIMITS.subjectMax
      ? [field('subject', 'max_length', `renders to more than ${SEND_LIMITS.subjectMax} characters`)]
      : []),
    ...(rendered.html.length > SEND_LIMITS.htmlMax
      ? [field('template_id', 'max_length', `the html renders to more than ${SEND_LIMITS.htmlMax} characters`)]
      : []),
    ...((rendered.text?.length ?? 0) > SEND_LIMITS.textMax
      ? [field('text', 'max_length', `renders to more than ${SEND_LIMITS.textMax} characters`)]
      : []),
  ];
  if (problems.length > 0)
    throw new AppError(
      'invalid_request',
      `The rendered template is not a sendable message: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}.`,
      { fields: problems },
    );
  if (rendered.html.length === 0 && (rendered.text ?? '').length === 0) {
    throw new AppError('invalid_request', `Template ${id} renders to an empty message; at least one of html or text is required.`, {
      reason: 'EMPTY_BODY',
      fields: [field('template_id', 'empty_body', 'renders to an empty html body and no text was given')],
    });
  }
  return {
    subject: rendered.subject,
    html: rendered.html || null,
    text: rendered.text ?? null,
    template: { id: template.id, version: template.version },
  };
}
