import { LRUCache } from 'lru-cache';
import type { Readable } from 'node:stream';
import { convert } from 'html-to-text';
import type { MikroORM } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { Domain, type EmailAttachmentRecord, type RecipientKind } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import { BlobNotFoundError, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import { decryptSecret } from '../../crypto/secret-box.ts';

/** What a message is built from: a transactional email entity, or the row a drain claimed. */
export interface MessageSource {
  id: string;
  domainId: string;
  fromEmail: string;
  fromName?: string | null | undefined;
  replyTo?: string | null | undefined;
  subject: string;
  html?: string | null | undefined;
  text?: string | null | undefined;
  headers: Record<string, string>;
  attachments: EmailAttachmentRecord[];
  messageId: string;
  scheduledAt?: Date | null | undefined;
  createdAt: Date;
}

export interface MessageRecipient {
  email: string;
  kind: RecipientKind;
}

/** Raised before anything reached the relay: the email cannot be built (missing bytes, no key). */
export class BuildFailure extends Error {}

const DKIM_KEY_TTL_MS = 60_000;
/**
 * The header fields the DKIM signature covers: RFC 6376 §5.4.1's recommendation (nodemailer's
 * default list) plus List-Unsubscribe-Post, which RFC 8058 §4 requires to be signed with
 * List-Unsubscribe for one-click unsubscribe to be honoured.
 */
const DKIM_SIGNED_HEADERS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'Resent-Date',
  'Resent-From',
  'Resent-Sender',
  'Resent-To',
  'Resent-Cc',
  'Resent-Message-ID',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Help',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
  'List-Subscribe',
  'List-Post',
  'List-Owner',
  'List-Archive',
].join(':');

/** The plain-text alternative of an HTML body (html-to-text): links kept as `text [url]`, images left out, lines wrapped at 78. */
export function plainTextOf(html: string): string {
  return convert(html, {
    wordwrap: 78,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
    ],
  });
}
const MAX_CACHED_KEYS = 10_000;

/**
 * Builds the MIME message of an email (nodemailer options, DKIM-signed with the sending
 * domain's key when sent). Decrypted DKIM keys are kept per domain for a minute, so a rotated
 * key is used within a minute and a drain does not load the domain and decrypt per email.
 */
export function createMessageBuilder(deps: { orm: MikroORM; blobs: BlobStore | null; config: Pick<Config, 'encryptionKeys'> }) {
  const signingKeys = new LRUCache<string, { domain: string; selector: string; privateKey: string }>({
    max: MAX_CACHED_KEYS,
    ttl: DKIM_KEY_TTL_MS,
  });

  async function signingKeyOf(domainId: string) {
    const cached = signingKeys.get(domainId);
    if (cached) return cached;
    const domain = await deps.orm.em.fork().findOneOrFail(Domain, { id: domainId }, ALL_TENANTS);
    if (deps.config.encryptionKeys.length === 0) throw new BuildFailure('HERALD_ENCRYPTION_KEY is not set: the DKIM key cannot be read');
    const entry = {
      domain: domain.domain,
      selector: domain.dkimSelector,
      privateKey: decryptSecret(deps.config.encryptionKeys, domain.dkimPrivateKeyEncrypted),
    };
    signingKeys.set(domainId, entry);
    return entry;
  }

  async function attachmentsOf(records: EmailAttachmentRecord[]): Promise<Mail.Attachment[]> {
    const attachments: Mail.Attachment[] = [];
    for (const record of records) {
      if (!record.blob_key || !deps.blobs) throw new BuildFailure(`the bytes of attachment ${record.filename} are not available`);
      let content: Readable;
      try {
        content = await deps.blobs.get(record.blob_key);
      } catch (error) {
        if (error instanceof BlobNotFoundError) throw new BuildFailure(`the bytes of attachment ${record.filename} are missing`);
        throw error;
      }
      attachments.push({
        filename: record.filename,
        content,
        ...(record.content_type ? { contentType: record.content_type } : {}),
        ...(record.content_id ? { cid: record.content_id, contentDisposition: 'inline' as const } : {}),
      });
    }
    return attachments;
  }

  return {
    /** The message for every recipient of the email (the envelope names who it goes to this time). */
    async build(email: MessageSource, recipients: readonly MessageRecipient[]): Promise<Mail.Options> {
      const key = await signingKeyOf(email.domainId);
      const attachments = await attachmentsOf(email.attachments);
      const byKind = (kind: 'to' | 'cc') => recipients.filter((r) => r.kind === kind).map((r) => r.email);
      const to = byKind('to');
      const cc = byKind('cc');
      return {
        from: { name: email.fromName ?? '', address: email.fromEmail },
        ...(to.length > 0 ? { to } : {}),
        ...(cc.length > 0 ? { cc } : {}),
        subject: email.subject,
        ...(email.html != null ? { html: email.html } : {}),
        // An HTML-only email also carries a plain-text alternative (spam filters and text-only
        // readers expect one), derived from the HTML.
        ...(email.text != null ? { text: email.text } : email.html ? { text: plainTextOf(email.html) } : {}),
        ...(email.replyTo ? { replyTo: email.replyTo } : {}),
        messageId: `<${email.messageId}>`,
        date: email.scheduledAt ?? email.createdAt,
        headers: { ...email.headers, 'X-Herald-Email-Id': email.id },
        attachments,
        dkim: { domainName: key.domain, keySelector: key.selector, privateKey: key.privateKey, headerFieldNames: DKIM_SIGNED_HEADERS },
        disableFileAccess: true,
        disableUrlAccess: true,
      };
    },
  };
}

export type MessageBuilder = ReturnType<typeof createMessageBuilder>;
