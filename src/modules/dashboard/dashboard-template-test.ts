import * as v from 'valibot';
import type { Template } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import type { SendCaller } from '../sandbox/sandbox.fns.ts';
import { SendEmailBody } from '../sends/sends.schemas.ts';
import type { SendsService } from '../sends/sends.service.ts';
import type { DashboardAuthService, SignedIn } from './dashboard-auth.service.ts';
import { fieldsOf } from './dashboard-template-editor.pages.ts';
import { renderPreview, sampleVariables } from './dashboard-template-preview.ts';

export interface TestSendOutcome {
  status: number;
  message: { error: string } | { notice: string };
}

/**
 * A test of a template's saved version, sent to one of the workspace's own people (never to any
 * other address) through the sends service, as POST /outbox/emails would send it: rendered with
 * the sample variables, subject prefixed with [Test]. The caller's semantics are the person's
 * (`callerOf`): an owner sends as with a live key, a member as with a test key (the sandbox).
 * What the sends service refuses (domain, credits, limits) is answered as a message.
 */
export async function sendTemplateTest(
  sends: Pick<SendsService, 'sendEmail'>,
  auth: Pick<DashboardAuthService, 'people'>,
  options: { signedIn: SignedIn; caller: SendCaller; template: Template; userId: string; from: string; variablesJson: string },
): Promise<TestSendOutcome> {
  const { signedIn, template } = options;
  const { users } = await auth.people(signedIn.orgId);
  const person = users.find((user) => user.id === options.userId);
  if (!person) return { status: 400, message: { error: 'Choose a person of this workspace to send the test to.' } };
  const fields = fieldsOf(template);
  const parts = { subject: fields.subject, previewText: fields.preview_text, html: fields.html };
  const rendered = renderPreview(parts, options.variablesJson, sampleVariables(parts, person.email));
  if (rendered.problems.length > 0) return { status: 400, message: { error: `No test sent: ${rendered.problems.join(' ')}` } };
  if (!rendered.html.trim()) return { status: 400, message: { error: 'No test sent: the template has no HTML yet.' } };
  // The API's own schema, so the test is held to the same limits as POST /outbox/emails.
  const input = v.safeParse(SendEmailBody, {
    from: options.from,
    to: person.email,
    subject: `[Test] ${rendered.subject || template.name}`,
    html: rendered.html,
    ...(rendered.text ? { text: rendered.text } : {}),
    tags: ['template-test'],
  });
  if (!input.success) {
    const [issue] = input.issues;
    return { status: 400, message: { error: `No test sent: ${v.getDotPath(issue) ?? 'the message'} ${issue.message}.` } };
  }
  try {
    const accepted = await sends.sendEmail(signedIn.orgId, options.caller, input.output);
    const where = options.caller.keyMode === 'test' ? ' It stays in the sandbox (test semantics): see it under Emails.' : '';
    return {
      status: 200,
      message: { notice: `Test of version ${template.version} sent to ${person.email} (email ${accepted.email.id}).${where}` },
    };
  } catch (error) {
    if (!(error instanceof AppError) || error.status >= 500) throw error;
    return { status: error.status, message: { error: `No test sent: ${error.message}` } };
  }
}
