import Mustache from 'mustache';
import { escapeHtml } from '../../html-escape.ts';
import { withOpenPixel, withTrackedLinks } from '../tracking/tracked-html.ts';
import type { TrackingChoice } from '../tracking/tracking.fns.ts';

/**
 * One broadcast message as the domain's drain builds it at the contact's turn: the broadcast's
 * subject and bodies rendered for the contact as it is then (a contact who unsubscribed, bounced,
 * complained, was suppressed or deleted since launch is skipped instead), with the compliance
 * parts every message carries: List-Unsubscribe with List-Unsubscribe-Post (RFC 8058 one-click),
 * a visible unsubscribe link and the sender's postal address in the footer.
 */

/** What the queue's claim returns for a broadcast message: the broadcast and the contact now. */
export interface BroadcastContent {
  broadcastId: string;
  status: string;
  subject: string;
  html: string;
  plainText: string;
  previewText: string;
  postalAddress: string | null;
  /** Open pixel and tracked links (the message's own switches, copied from its broadcast). */
  tracking: TrackingChoice;
  /** Null when the contact was deleted since launch. */
  contact: {
    id: string;
    email: string;
    firstName: string;
    lastName: string;
    company: string;
    customFields: Record<string, unknown> | null;
    status: string;
    suppressed: boolean;
  } | null;
}

/** Why a broadcast message is not sent at its turn, or null when it goes. */
export function skipReason(content: BroadcastContent): string | null {
  if (content.status === 'cancelled') return 'broadcast cancelled';
  if (!content.contact) return 'contact deleted';
  if (content.contact.status !== 'active') return `contact ${content.contact.status}`;
  if (content.contact.suppressed) return 'address suppressed';
  return null;
}

/**
 * The variables a broadcast renders with: the contact's fields (`email`, `first_name`,
 * `last_name`, `company`), its custom fields at the top level (never over a contact field) and
 * under `custom`, and `unsubscribe_url`. Fallbacks use Mustache's inverted sections:
 * `{{#first_name}}{{first_name}}{{/first_name}}{{^first_name}}there{{/first_name}}`.
 */
export function broadcastVariables(contact: NonNullable<BroadcastContent['contact']>, unsubscribeUrl: string): Record<string, unknown> {
  const custom = contact.customFields ?? {};
  return {
    ...custom,
    custom,
    email: contact.email,
    first_name: contact.firstName,
    last_name: contact.lastName,
    company: contact.company,
    unsubscribe_url: unsubscribeUrl,
  };
}

const PLAIN = { escape: (value: unknown) => String(value) };

/** Whether a broadcast's parts parse as Mustache templates (checked at launch); the first problem otherwise. */
export function templateProblem(parts: { subject: string; html: string; plainText: string }): { field: string; message: string } | null {
  for (const [field, template] of [
    ['subject', parts.subject],
    ['html', parts.html],
    ['plain_text', parts.plainText],
  ] as const) {
    try {
      Mustache.parse(template);
    } catch (error) {
      return { field, message: error instanceof Error ? error.message : String(error) };
    }
  }
  return null;
}

export interface RenderedBroadcastMessage {
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
}

const HIDDEN_PREVIEW = 'display:none;max-height:0;overflow:hidden;mso-hide:all';

/** The hidden preheader (the inbox's preview line) at the start of the HTML body. */
function withPreview(html: string, previewText: string): string {
  if (!previewText) return html;
  const preheader = `<div style="${HIDDEN_PREVIEW}">${escapeHtml(previewText)}</div>`;
  const body = /<body[^>]*>/i.exec(html);
  return body
    ? `${html.slice(0, body.index + body[0].length)}${preheader}${html.slice(body.index + body[0].length)}`
    : `${preheader}${html}`;
}

/** The footer: the postal address and an unsubscribe link, before `</body>` when there is one. */
function withHtmlFooter(html: string, postalAddress: string | null, unsubscribeUrl: string): string {
  const address = postalAddress ? `<div>${escapeHtml(postalAddress).replace(/\r?\n/g, '<br>')}</div>` : '';
  const footer = `<div style="margin-top:24px;font-size:12px;color:#666">${address}<div><a href="${escapeHtml(unsubscribeUrl)}">Unsubscribe</a></div></div>`;
  const end = html.search(/<\/body>/i);
  return end === -1 ? `${html}${footer}` : `${html.slice(0, end)}${footer}${html.slice(end)}`;
}

function withTextFooter(text: string, postalAddress: string | null, unsubscribeUrl: string): string {
  return `${text}\n\n--\n${postalAddress ? `${postalAddress}\n` : ''}Unsubscribe: ${unsubscribeUrl}\n`;
}

/**
 * Renders a broadcast for one contact: subject and text plain, HTML with every `{{value}}`
 * escaped (`{{{value}}}` is the sender's explicit raw output), then the preheader, with tracking
 * its http(s) links through signed click URLs (not the unsubscribe link), the footer, the open
 * pixel, and the list headers. `links.unsubscribe` is the signed one-click URL (also the page a
 * person opens). The text body is never rewritten.
 */
export function renderBroadcastMessage(
  content: BroadcastContent,
  links: { unsubscribe: string; listId: string; feedbackId: string; open?: string; click?: (target: string) => string },
): RenderedBroadcastMessage {
  const contact = content.contact;
  if (!contact) throw new Error('a broadcast message without its contact is skipped, not rendered');
  const variables = broadcastVariables(contact, links.unsubscribe);
  const subject = Mustache.render(content.subject, variables, {}, PLAIN)
    .replace(/[\r\n]+/g, ' ')
    .trim();
  let html = content.html ? withPreview(Mustache.render(content.html, variables), content.previewText) : null;
  if (html !== null && content.tracking.clicks && links.click)
    html = withTrackedLinks(html, links.click, (target) => target === links.unsubscribe);
  if (html !== null) html = withHtmlFooter(html, content.postalAddress, links.unsubscribe);
  if (html !== null && content.tracking.opens && links.open) html = withOpenPixel(html, links.open);
  const text = content.plainText
    ? withTextFooter(Mustache.render(content.plainText, variables, {}, PLAIN), content.postalAddress, links.unsubscribe)
    : null;
  return {
    subject,
    html,
    text,
    headers: {
      'List-Unsubscribe': `<${links.unsubscribe}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      'List-Id': links.listId,
      'Feedback-ID': links.feedbackId,
    },
  };
}
