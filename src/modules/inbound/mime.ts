import { Transform, type Readable } from 'node:stream';
import { MailParser, type AddressObject, type AttachmentStream, type EmailAddress, type HeaderValue, type MessageText } from 'mailparser';
import type { MailboxAddress } from '../../../db/entities/index.ts';
import { INBOX_HTML_LIMIT, INBOX_TEXT_LIMIT } from '../inbox/outbound.ts';
import { bareMessageId, parseMessageIdList } from '../inbox/threading.ts';
import { automaticHeader } from './auto-reply.ts';

/** One attachment as the parse meets it; `content` must be read or left (the parser drains it after). */
export interface AttachmentPart {
  /** Order in the MIME tree, from 0: the attachment's identity across parses of the same bytes. */
  position: number;
  filename: string;
  contentType: string;
  contentId: string | null;
  content: Readable;
}

export interface AttachmentMeta {
  position: number;
  filename: string;
  contentType: string;
  contentId: string | null;
  sizeBytes: number;
}

export interface ParsedMessage {
  subject: string;
  /** Capped at INBOX_TEXT_LIMIT characters (`textTruncated`). */
  text: string;
  textTruncated: boolean;
  /** Capped at INBOX_HTML_LIMIT characters. */
  html: string | null;
  from: MailboxAddress | null;
  to: MailboxAddress[];
  cc: MailboxAddress[];
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  date: Date | null;
  attachments: AttachmentMeta[];
  /** Why the headers mark the message as sent by a machine (auto-reply.fns.ts), or null. */
  automaticHeader: string | null;
  /** Why the parse stopped early, if it did; whatever was read before is kept. */
  parseError: string | null;
  /** The html was too large to convert to text, and mailparser then drops it: parse again with `htmlOnly`. */
  htmlTooLong: boolean;
}

export interface ParseOptions {
  /** Keep html without converting it to text (no size limit applies then). */
  htmlOnly?: boolean;
}

/** HTML larger than this is kept but not converted to text (mailparser's html-to-text is slow on huge input). */
const HTML_TO_TEXT_LIMIT = 2 * 1024 * 1024;

/** PostgreSQL text cannot hold NUL; broken encodings can produce it. */
function clean(value: string): string {
  return value.includes('\u0000') ? value.replaceAll('\u0000', '') : value;
}

function addresses(value: HeaderValue | undefined): MailboxAddress[] {
  if (!value || typeof value !== 'object' || value instanceof Date) return [];
  const objects = (Array.isArray(value) ? value : [value]) as AddressObject[];
  const flat: MailboxAddress[] = [];
  const visit = (entry: EmailAddress) => {
    if (entry.group) entry.group.forEach(visit);
    else if (entry.address) flat.push({ email: clean(entry.address).slice(0, 320), name: clean(entry.name ?? '').slice(0, 320) });
  };
  for (const object of objects) (object?.value ?? []).forEach(visit);
  return flat;
}

function headerText(value: HeaderValue | undefined): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join(' ');
  return null;
}

function safeFilename(name: string | undefined, position: number): string {
  // Control characters never belong in a file name.
  // eslint-disable-next-line no-control-regex
  const controls = /[\u0000-\u001f\u007f]/g;
  const cleaned = (name ?? '').replace(controls, '').trim().slice(0, 512);
  return cleaned || `attachment-${position + 1}`;
}

/** Mailparser reports a few recoverable problems as errors while still producing the text. */
function isRecoverable(error: Error): boolean {
  return /^(HTML too long for parsing|Failed to parse HTML)/.test(error.message);
}

/**
 * Parses a raw message from a stream with mailparser's streaming MailParser: headers, text
 * and html are collected (and capped), each attachment is handed to `onAttachment` as a stream
 * (never buffered here) or, without a handler, drained and only measured. A parse that fails
 * midway still resolves, with what was read and `parseError` set; it never rejects.
 */
export function parseMessageStream(
  source: Readable,
  onAttachment?: (part: AttachmentPart) => Promise<void>,
  options: ParseOptions = {},
): Promise<ParsedMessage> {
  const parsed: ParsedMessage = {
    subject: '',
    text: '',
    textTruncated: false,
    html: null,
    from: null,
    to: [],
    cc: [],
    messageId: null,
    inReplyTo: null,
    references: [],
    date: null,
    attachments: [],
    automaticHeader: null,
    parseError: null,
    htmlTooLong: false,
  };
  const parser = new MailParser({
    skipImageLinks: true,
    skipTextToHtml: true,
    maxHtmlLengthToParse: HTML_TO_TEXT_LIMIT,
    skipHtmlToText: options.htmlOnly ?? false,
  });
  let position = 0;
  let handling: Promise<void> = Promise.resolve();
  let current: Readable | null = null;

  return new Promise<ParsedMessage>((resolve) => {
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      if (error) {
        parsed.parseError = error.message.slice(0, 500);
        source.unpipe(parser);
        source.resume();
        parser.destroy();
        current?.destroy();
      }
      void handling.then(() => resolve(parsed));
    };

    parser.on('headers', (headers) => {
      parsed.subject = clean(headerText(headers.get('subject')) ?? '').slice(0, 998);
      parsed.from = addresses(headers.get('from'))[0] ?? null;
      parsed.to = addresses(headers.get('to'));
      parsed.cc = addresses(headers.get('cc'));
      const messageId = headerText(headers.get('message-id'));
      const bare = messageId ? clean(bareMessageId(messageId)) : '';
      // A value with whitespace is no Message-ID; nothing could thread by it.
      parsed.messageId = bare && bare.length <= 998 && !/\s/.test(bare) ? bare : null;
      parsed.inReplyTo = parseMessageIdList(headerText(headers.get('in-reply-to')))[0] ?? null;
      parsed.references = parseMessageIdList(headerText(headers.get('references')));
    });

    // mailparser turns an unparseable Date header into "now"; read the header line ourselves.
    parser.on('headerLines', (lines: { key: string; line: string }[]) => {
      const line = lines.find((entry) => entry.key === 'date')?.line;
      const value = line ? Date.parse(line.slice(line.indexOf(':') + 1).trim()) : Number.NaN;
      parsed.date = Number.isNaN(value) ? null : new Date(value);
      parsed.automaticHeader = automaticHeader(lines);
    });

    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type === 'text') {
        const text = typeof data.text === 'string' ? clean(data.text) : '';
        parsed.textTruncated = text.length > INBOX_TEXT_LIMIT;
        parsed.text = text.slice(0, INBOX_TEXT_LIMIT);
        parsed.html = typeof data.html === 'string' ? clean(data.html).slice(0, INBOX_HTML_LIMIT) : null;
        return;
      }
      const meta: AttachmentMeta = {
        position,
        filename: safeFilename(data.filename, position),
        contentType: clean(data.contentType || 'application/octet-stream').slice(0, 255),
        contentId: data.contentId ? clean(data.contentId).slice(0, 998) : null,
        sizeBytes: 0,
      };
      position += 1;
      parsed.attachments.push(meta);
      // Counted on the way through; paused until the handler reads it, so nothing is lost
      // while the handler gets ready.
      const content = (data.content as Readable).pipe(
        new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            meta.sizeBytes += chunk.length;
            callback(null, chunk);
          },
        }),
      );
      current = content;
      const handle = (onAttachment ? onAttachment({ ...meta, content }).catch(() => {}) : Promise.resolve()).then(
        () =>
          new Promise<void>((done) => {
            if (content.readableEnded || content.destroyed) return done();
            content
              .once('end', done)
              .once('close', done)
              .once('error', () => done());
            content.resume();
          }),
      );
      handling = handling.then(() => handle).finally(() => data.release());
    });

    parser.on('error', (error: Error) => {
      if (error.message.startsWith('HTML too long for parsing')) parsed.htmlTooLong = true;
      if (!isRecoverable(error)) finish(error);
    });
    parser.on('end', () => finish());
    source.on('error', (error: Error) => finish(error));
    source.pipe(parser);
  });
}

/**
 * A best-effort look at the header block when MIME parsing failed before the headers: the
 * Subject line (undecoded) is better than nothing for a message that must still be listed.
 */
export function scanSubject(head: Buffer): string {
  const text = head.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const block = (end === -1 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const match = /^subject:[ \t]*(.*)$/im.exec(block);
  return (match?.[1] ?? '').trim().slice(0, 998);
}
