/**
 * The attached or quoted original message of a report: its header blocks, its Message-ID and
 * its recipients, for messages whose MIME structure mailparser kept or flattened. Pure.
 */
import type { Attachment, ParsedMail } from 'mailparser';
import { leadingHeaders, messageIdFromHeaders } from './report-dsn.ts';
import { normaliseAddress } from './report-fields.ts';

export function attachmentText(a: Attachment): string {
  return a.content.toString('utf8');
}

const ORIGINAL_TYPES = new Set(['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers', 'text/rfc822-header']);

/** The Message-ID of the bounced or reported message: attached original, else quoted text. */
export function originalMessageId(mail: ParsedMail, raw: Buffer): string | null {
  for (const headers of originalHeaderBlocks(mail, raw)) {
    const id = messageIdFromHeaders(headers);
    if (id) return id;
  }
  const own = mail.messageId?.replace(/^<|>$/g, '') ?? null;
  for (const source of [mail.text ?? '', rawBody(raw)]) {
    const re = /^[ \t>]*message-id[ \t]*:[ \t]*(?:\r?\n[ \t]+)?<([^\s<>]+@[^\s<>]+)>/gim;
    for (const m of source.matchAll(re)) if (m[1] !== own) return m[1]!;
  }
  return null;
}

/**
 * Header blocks of the attached original message: from attachments mailparser kept, else
 * from the raw body after a message/rfc822 or text/rfc822-headers part header (mailparser
 * expands inline message/rfc822 parts instead of keeping them).
 */
export function originalHeaderBlocks(mail: ParsedMail, raw: Buffer): string[] {
  const blocks = mail.attachments
    .filter((a) => ORIGINAL_TYPES.has(a.contentType.toLowerCase()))
    .map((a) => leadingHeaders(attachmentText(a)));
  const body = rawBody(raw);
  const re = /^content-type:[ \t]*(?:message\/(?:rfc822|global)|text\/rfc822-headers?)[^\n]*\n(?:[ \t].*\n|[A-Za-z-]+:.*\n)*\r?\n/gim;
  for (const m of body.matchAll(re)) blocks.push(leadingHeaders(body.slice(m.index + m[0].length)));
  return blocks;
}

export function originalRecipients(mail: ParsedMail, raw: Buffer): string[] {
  for (const headers of originalHeaderBlocks(mail, raw)) {
    const to = /^to[ \t]*:[ \t]*((?:.*)(?:\r?\n[ \t].*)*)/im.exec(headers);
    const found = to ? [...to[1]!.matchAll(/[^\s<>"',;:]+@[^\s<>"',;:]+\.[A-Za-z]{2,}/g)].map((m) => normaliseAddress(m[0])) : [];
    if (found.length > 0) return [...new Set(found)];
  }
  return [];
}

/** The body of a raw message as text (for MIME that mailparser could not take apart). */
export function rawBody(raw: Buffer): string {
  const text = raw.toString('utf8');
  const start = text.search(/\r?\n\r?\n/);
  return start < 0 ? '' : text.slice(start);
}
