import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttachmentUpload, Contact, EmailRecipient, InboxMessage, Suppression, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createBlobStore } from '../../src/blob/open-blob-store.ts';
import { SEND_REQUEST_BYTES_MAX } from '../../src/modules/sends/sends.schemas.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { unique } from '../support/factories.ts';
import { expectError, type ApiResponse } from '../support/http.ts';
import { addSendingDomain, creditsOf, setCredits } from '../support/sending.ts';

const MB = 1024 * 1024;
type EmailRecord = {
  _id: string;
  message_id: string;
  status: string;
  scheduled_at: string | null;
  recipients: { email: string; kind: string; status: string }[];
  credits_charged: number;
};

describe('POST /api/v1/outbox/emails', () => {
  let h: ApiHarness;
  let domain: string;
  let orgId: string;
  const send = (body: Record<string, unknown>, headers: Record<string, string> = idem()) =>
    h.request('POST', '/api/v1/outbox/emails', { body, headers });
  const body = (overrides: Record<string, unknown> = {}) => ({
    from: `Orders <orders@${domain}>`,
    to: 'buyer@example.com',
    subject: 'Your order',
    text: 'Thanks for your order.',
    ...overrides,
  });
  const reasonOf = (response: ApiResponse) => (response.body.error?.details as { reason?: string } | undefined)?.reason;
  const expectReason = (response: ApiResponse, status: number, code: string, reason: string) => {
    expectError(response, status, code);
    expect(reasonOf(response), JSON.stringify(response.body)).toBe(reason);
  };
  const expectAccepted = (response: ApiResponse) => {
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    return response.body.data as EmailRecord;
  };
  const emailCount = async () => scopeToOrg(h.stack.orm.em, orgId).count(TransactionalEmail, {});

  beforeAll(async () => {
    // No worker here: the API must not wait for a hand-off that nobody performs.
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    orgId = h.workspace.org.id;
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    await setCredits(h.stack.orm, orgId, 1_000_000);
  });
  afterAll(async () => h?.close());

  it('accepts a send with 202 and the transactional email record', async () => {
    const email = expectAccepted(
      await send(body({ to: ['a@example.com', 'B@Example.com'], cc: ['c@example.com'], bcc: ['a@example.com', 'd@example.com'] })),
    );
    expect(email._id).toMatch(/^[a-f0-9]{24}$/);
    expect(email.message_id).toBe(`${email._id}.0@${domain}`);
    expect(email.status).toBe('queued');
    expect(email.scheduled_at).toBeNull();
    // Each address once, lower-cased, in its first field: a + b (to), c (cc), d (bcc).
    expect(email.recipients.map((r) => [r.email, r.kind, r.status])).toEqual([
      ['a@example.com', 'to', 'queued'],
      ['b@example.com', 'to', 'queued'],
      ['c@example.com', 'cc', 'queued'],
      ['d@example.com', 'bcc', 'queued'],
    ]);
    expect(email.credits_charged).toBe(4);
    const read = await h.request('GET', `/api/v1/outbox/emails/${email._id}`);
    expect(read.status).toBe(200);
    expect((read.body.data as EmailRecord).message_id).toBe(email.message_id);
    // The outbound message is in the inbox, in a thread, with nothing to poll for.
    const inbox = await scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(InboxMessage, { emailId: email._id });
    expect(inbox.direction).toBe('outbound');
    expect(inbox.attachmentIngestStatus).toBe('unavailable');
    expect(inbox.attachmentsReady).toBe(true);
  });

  it('commits the idempotent answer with the email: the record holds the 202 as sent, and a retry replays it without a second email', async () => {
    const key = idem();
    const first = await send(body({ subject: 'Idempotent answer' }), key);
    const email = expectAccepted(first);
    const [record] = await h.stack.orm.em
      .getConnection()
      .execute<{ state: string; response_status: number; response_body: unknown }[]>(
        `select state, response_status, response_body from idempotency_records where key = ?`,
        [key['idempotency-key']],
      );
    expect(record).toMatchObject({ state: 'completed', response_status: 202 });
    expect(record?.response_body).toEqual(first.body);
    const before = await emailCount();
    const again = await send(body({ subject: 'Idempotent answer' }), key);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // The same bytes, keys in the same order, not only an equal object.
    expect(JSON.stringify(again.body)).toBe(JSON.stringify(first.body));
    expect((again.body.data as EmailRecord)._id).toBe(email._id);
    expect(await emailCount()).toBe(before);
  });

  it('takes List-Unsubscribe and List-Unsubscribe-Post (RFC 8058) and refuses malformed ones, naming the header', async () => {
    const good = {
      'List-Unsubscribe': '<https://shop.example.com/u/1>, <mailto:u@shop.example.com>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
    expectAccepted(await send(body({ headers: good })));
    expectAccepted(await send(body({ headers: { 'list-unsubscribe': '<mailto:u@shop.example.com>' } })));
    for (const [headers, path] of [
      [{ 'List-Unsubscribe': 'https://shop.example.com/u/1' }, 'headers.List-Unsubscribe'],
      [{ 'List-Unsubscribe': '<http://shop.example.com/u/1>' }, 'headers.List-Unsubscribe'],
      [{ 'List-Unsubscribe': '<javascript:alert(1)>' }, 'headers.List-Unsubscribe'],
      [
        { 'List-Unsubscribe': '<mailto:u@shop.example.com>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
        'headers.List-Unsubscribe-Post',
      ],
      [{ 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }, 'headers.List-Unsubscribe-Post'],
      [{ 'List-Unsubscribe': '<https://shop.example.com/u/1>', 'List-Unsubscribe-Post': 'yes' }, 'headers.List-Unsubscribe-Post'],
    ] as const) {
      const refused = await send(body({ headers }));
      expectError(refused, 400, 'invalid_request');
      expect(
        (refused.body.error?.details as { fields: { path: string }[] }).fields.map((f) => f.path),
        JSON.stringify(headers),
      ).toEqual([path]);
    }
  });

  describe('Idempotency-Key claimed inside the acceptance transaction', () => {
    const recordOf = async (key: string) =>
      h.stack.orm.em
        .getConnection()
        .execute<{ state: string; response_status: number }[]>(`select state, response_status from idempotency_records where key = ?`, [
          key,
        ]);

    it('30 parallel requests with one key and body: one email, every answer the same 202 (or 409 while it runs)', async () => {
      const key = idem();
      const before = await emailCount();
      const answers = await Promise.all(Array.from({ length: 30 }, () => send(body({ subject: 'Parallel duplicates' }), key)));
      const accepted = answers.filter((a) => a.status === 202);
      expect(accepted.length).toBeGreaterThan(0);
      for (const answer of answers.filter((a) => a.status !== 202)) expectError(answer, 409, 'conflict');
      expect(new Set(accepted.map((a) => (a.body.data as EmailRecord)._id)).size).toBe(1);
      expect(accepted.filter((a) => a.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
      expect(await emailCount()).toBe(before + 1);
      expect(await recordOf(key['idempotency-key']!)).toEqual([{ state: 'completed', response_status: 202 }]);
    });

    it('stores a refusal rolled back with the acceptance and replays it, also once the cause is gone', async () => {
      const key = idem();
      const other = `${unique('later').toLowerCase()}.example.com`;
      const first = await send(body({ from: `x@${other}` }), key);
      expectReason(first, 403, 'forbidden', 'DOMAIN_NOT_FOUND');
      expect(await recordOf(key['idempotency-key']!)).toEqual([{ state: 'completed', response_status: 403 }]);
      await addSendingDomain(h.stack.orm, orgId, { domain: other });
      const again = await send(body({ from: `x@${other}` }), key);
      expect(again.status).toBe(403);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    it('answers 409 idempotency_conflict for the key of an accepted send reused with other content, and sends nothing', async () => {
      const key = idem();
      expectAccepted(await send(body({ subject: 'First content' }), key));
      const before = await emailCount();
      expectError(await send(body({ subject: 'Other content' }), key), 409, 'idempotency_conflict');
      expect(await emailCount()).toBe(before);
    });

    it('stores nothing for a 429, so a retry with the key can still be accepted', async () => {
      const capped = await addSendingDomain(h.stack.orm, orgId, { dailyCap: 1 });
      expectAccepted(await send(body({ from: `x@${capped.domain}` })));
      const key = idem();
      expectReason(
        await send(body({ from: `x@${capped.domain}`, subject: 'Over the cap' }), key),
        429,
        'rate_limited',
        'DAILY_CAP_REACHED',
      );
      expect(await recordOf(key['idempotency-key']!)).toEqual([]);
    });
  });

  it('answers 404 for an email of no one and of another workspace', async () => {
    expectError(await h.request('GET', '/api/v1/outbox/emails/0123456789abcdef01234567'), 404, 'not_found');
  });

  describe('from', () => {
    it.each([
      ['too short', 'a@'],
      ['no host', 'orders@'],
      ['a host that is not a domain', 'orders@localhost'],
      ['an unclosed display name', 'Orders <orders@x.example.com'],
      ['two addresses', 'a@x.example.com, b@x.example.com'],
    ])('answers 400 INVALID_FROM for %s', async (_name, from) => {
      expectReason(await send(body({ from })), 400, 'invalid_request', 'INVALID_FROM');
    });

    it('takes any local part and a quoted display name, 3 to 320 characters', async () => {
      expectAccepted(await send(body({ from: `"Ørders, Inc." <weird.+tag=x@${domain}>` })));
      const address = `x@${domain}`;
      const name = 'n'.repeat(320 - address.length - 3);
      expectAccepted(await send(body({ from: `${name} <${address}>` })));
      expectReason(await send(body({ from: `${name}n <${address}>` })), 400, 'invalid_request', 'INVALID_FROM');
    });

    it('answers 403 with the domain reasons', async () => {
      expectReason(await send(body({ from: 'orders@not-ours.example.org' })), 403, 'forbidden', 'DOMAIN_NOT_FOUND');
      const pending = await addSendingDomain(h.stack.orm, orgId, { verified: false });
      expectReason(await send(body({ from: `orders@${pending.domain}` })), 403, 'forbidden', 'DOMAIN_NOT_READY');
      const attention = await addSendingDomain(h.stack.orm, orgId, { status: 'attention' });
      expectReason(await send(body({ from: `orders@${attention.domain}` })), 403, 'forbidden', 'DOMAIN_ATTENTION');
      const recovering = await addSendingDomain(h.stack.orm, orgId, { reputation: 'recovery' });
      expectReason(await send(body({ from: `orders@${recovering.domain}` })), 403, 'forbidden', 'DOMAIN_REPUTATION_RECOVERY');
    });
  });

  describe('recipients', () => {
    const addresses = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`);
    it('answers 400 NO_RECIPIENTS without to, or with an empty list', async () => {
      const { to: _omit, ...withoutTo } = body();
      expectReason(await send(withoutTo), 400, 'invalid_request', 'NO_RECIPIENTS');
      expectReason(await send(body({ to: [] })), 400, 'invalid_request', 'NO_RECIPIENTS');
    });
    it('takes 50 in each of to, cc and bcc and answers TOO_MANY_RECIPIENTS at 51', async () => {
      const full = expectAccepted(await send(body({ to: addresses(50, 't'), cc: addresses(50, 'c'), bcc: addresses(50, 'b') })));
      expect(full.recipients).toHaveLength(150);
      for (const field of ['to', 'cc', 'bcc']) {
        expectReason(await send(body({ [field]: addresses(51, field) })), 400, 'invalid_request', 'TOO_MANY_RECIPIENTS');
      }
    });
    it('answers 400 for an address that is not an email', async () => {
      const response = await send(body({ to: ['ok@example.com', 'not an address'] }));
      expectError(response, 400, 'invalid_request');
      expect(JSON.stringify(response.body.error?.details)).toContain('to');
    });
    it('answers 403 RECIPIENT_SUPPRESSED for a suppressed address, a bounced contact and the simulator address', async () => {
      const em = scopeToOrg(h.stack.orm.em, orgId);
      em.create(Suppression, { orgId, email: 'gone@example.com', reason: 'hard_bounce', createdAt: new Date() });
      em.create(Contact, { orgId, email: 'bounced@example.com', status: 'bounced' });
      await em.flush();
      const before = await emailCount();
      const suppressed = await send(body({ to: ['fine@example.com'], bcc: ['GONE@example.com'] }));
      expectReason(suppressed, 403, 'forbidden', 'RECIPIENT_SUPPRESSED');
      expect((suppressed.body.error?.details as { recipients: string[] }).recipients).toEqual(['gone@example.com']);
      expectReason(await send(body({ to: 'bounced@example.com' })), 403, 'forbidden', 'RECIPIENT_SUPPRESSED');
      expectReason(await send(body({ to: 'suppressed@simulator.herald.test' })), 403, 'forbidden', 'RECIPIENT_SUPPRESSED');
      expect(await emailCount()).toBe(before);
    });
  });

  describe('content', () => {
    it('answers 400 EMPTY_BODY without html and text', async () => {
      expectReason(await send({ from: `o@${domain}`, to: 'x@example.com', subject: 'Hi' }), 400, 'invalid_request', 'EMPTY_BODY');
      expectReason(await send(body({ text: '', html: '' })), 400, 'invalid_request', 'EMPTY_BODY');
      expectAccepted(await send(body({ text: undefined, html: '<p>Hi</p>' })));
    });
    it.each([
      ['subject', 998],
      ['html', 500_000],
      ['text', 200_000],
    ])('takes %s at %i characters and refuses one more', async (field, max) => {
      expectAccepted(await send(body({ [field]: 'x'.repeat(max) })));
      const response = await send(body({ [field]: 'x'.repeat(max + 1) }));
      expectError(response, 400, 'invalid_request');
      expect(reasonOf(response)).toBeUndefined();
    });
    it('takes header values up to 4,000 characters and keeps Message-ID and addressing headers for itself', async () => {
      expectAccepted(await send(body({ headers: { 'X-Campaign': 'v'.repeat(4000), 'List-Unsubscribe': '<mailto:u@example.com>' } })));
      expectError(await send(body({ headers: { 'X-Campaign': 'v'.repeat(4001) } })), 400, 'invalid_request');
      for (const name of ['Message-ID', 'message-id', 'Bcc', 'From', 'DKIM-Signature']) {
        expectError(await send(body({ headers: { [name]: 'x' } })), 400, 'invalid_request');
      }
      expectError(await send(body({ headers: { 'X-Injected': 'a\r\nBcc: evil@example.com' } })), 400, 'invalid_request');
    });
    it('refuses identity headers (Resent-*, Sender) with 400 naming the field', async () => {
      for (const name of ['Resent-From', 'resent-sender', 'Resent-Message-ID', 'RESENT-TO', 'Sender']) {
        const refused = await send(body({ headers: { 'X-Tag': '1', [name]: 'boss@elsewhere.example' } }));
        expectError(refused, 400, 'invalid_request');
        expect((refused.body.error?.details as { fields: { path: string; type: string }[] }).fields, name).toEqual([
          expect.objectContaining({ path: `headers.${name}`, type: 'reserved_header' }),
        ]);
      }
    });
    it('takes 50 custom headers and refuses 51', async () => {
      const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-Tag-${i}`, String(i)]));
      expectAccepted(await send(body({ headers: headers(50) })));
      expectError(await send(body({ headers: headers(51) })), 400, 'invalid_request');
    });
  });

  describe('attachments', () => {
    const inline = (overrides: Record<string, unknown> = {}) => ({
      filename: 'note.txt',
      content: Buffer.from('hello').toString('base64'),
      content_type: 'text/plain',
      ...overrides,
    });
    it('takes 20 and answers TOO_MANY_ATTACHMENTS at 21', async () => {
      expectAccepted(await send(body({ attachments: Array.from({ length: 20 }, (_, i) => inline({ filename: `f${i}.txt` })) })));
      expectReason(
        await send(body({ attachments: Array.from({ length: 21 }, (_, i) => inline({ filename: `f${i}.txt` })) })),
        400,
        'invalid_request',
        'TOO_MANY_ATTACHMENTS',
      );
    });
    it.each([
      ['bad base64', { content: 'not base64!!' }],
      ['a missing filename', { filename: undefined }],
      ['an empty filename', { filename: '' }],
      ['an executable', { filename: 'setup.exe', content_type: 'application/octet-stream' }],
      ['a disallowed content type', { content_type: 'application/x-msdownload' }],
      ['both content and attachment_id', { attachment_id: 'abc' }],
    ])('answers 400 INVALID_ATTACHMENT for %s', async (_name, overrides) => {
      expectReason(await send(body({ attachments: [inline(overrides)] })), 400, 'invalid_request', 'INVALID_ATTACHMENT');
    });
    it('answers 400 INVALID_ATTACHMENT for a duplicate content_id', async () => {
      const response = await send(
        body({ attachments: [inline({ content_id: 'logo' }), inline({ filename: 'b.txt', content_id: 'logo' })] }),
      );
      expectReason(response, 400, 'invalid_request', 'INVALID_ATTACHMENT');
    });
    it('answers 404 INVALID_ATTACHMENT for an unknown or unfinished upload', async () => {
      expectReason(
        await send(body({ attachments: [{ attachment_id: '0123456789abcdef01234567' }] })),
        404,
        'not_found',
        'INVALID_ATTACHMENT',
      );
      const em = scopeToOrg(h.stack.orm.em, orgId);
      const pending = em.create(AttachmentUpload, {
        orgId,
        filename: 'a.pdf',
        contentType: 'application/pdf',
        sizeBytes: 10,
        blobKey: 'uploads/x/y',
        expiresAt: new Date(Date.now() + 3600_000),
        createdAt: new Date(),
      });
      await em.flush();
      expectReason(await send(body({ attachments: [{ attachment_id: pending.id }] })), 404, 'not_found', 'INVALID_ATTACHMENT');
    });
    it('takes an inline attachment of exactly 12 MB and answers 413 ATTACHMENT_TOO_LARGE one byte over', async () => {
      const exact = Buffer.alloc(12 * MB, 7).toString('base64');
      expectAccepted(
        await send(body({ attachments: [inline({ filename: 'big.bin', content: exact, content_type: 'application/octet-stream' })] })),
      );
      const over = Buffer.alloc(12 * MB + 1, 7).toString('base64');
      expectReason(
        await send(body({ attachments: [inline({ filename: 'big.bin', content: over, content_type: 'application/octet-stream' })] })),
        413,
        'payload_too_large',
        'ATTACHMENT_TOO_LARGE',
      );
    });
    it('bounds bodies plus attachments at 25 MB (413 MESSAGE_TOO_LARGE), reachable with stored uploads', async () => {
      const blobs = (await createBlobStore(h.stack.config))!;
      const em = scopeToOrg(h.stack.orm.em, orgId);
      const upload = async (size: number) => {
        const row = em.create(AttachmentUpload, {
          orgId,
          filename: `${unique('u')}.bin`,
          contentType: 'application/octet-stream',
          sizeBytes: size,
          status: 'uploaded',
          blobKey: `uploads/${orgId}/${unique('b')}`,
          expiresAt: new Date(Date.now() + 3600_000),
          uploadedAt: new Date(),
          createdAt: new Date(),
        });
        await blobs.put(row.blobKey, Buffer.alloc(size, 1));
        await em.flush();
        return row.id;
      };
      const ids = [await upload(12 * MB), await upload(12 * MB), await upload(MB - 4)];
      const attachments = ids.map((attachment_id) => ({ attachment_id }));
      expectAccepted(await send(body({ text: 'abcd', attachments })));
      expectReason(await send(body({ text: 'abcde', attachments })), 413, 'payload_too_large', 'MESSAGE_TOO_LARGE');
    });
    it('takes a 25 MB message sent entirely inline (base64 makes the request about 33.4 MiB)', async () => {
      const content = (size: number) => Buffer.alloc(size, 7).toString('base64');
      const attachments = [12 * MB, 12 * MB, MB - 4].map((size, i) =>
        inline({ filename: `part-${i}.bin`, content: content(size), content_type: 'application/octet-stream' }),
      );
      expectAccepted(await send(body({ text: 'abcd', attachments })));
      expectReason(await send(body({ text: 'abcde', attachments })), 413, 'payload_too_large', 'MESSAGE_TOO_LARGE');
    });
    it('answers 413 REQUEST_TOO_LARGE for a request body over the send limit (SEND_REQUEST_BYTES_MAX)', async () => {
      const response = await send(body({ text: 'x'.repeat(SEND_REQUEST_BYTES_MAX) }));
      expectReason(response, 413, 'payload_too_large', 'REQUEST_TOO_LARGE');
      expect(response.body.error?.details?.limit_bytes).toBe(SEND_REQUEST_BYTES_MAX);
    });
  });

  describe('scheduled_at', () => {
    it('resolves natural language to UTC and returns it', async () => {
      const before = Date.now();
      const email = expectAccepted(await send(body({ scheduled_at: 'in 2 hours' })));
      expect(email.status).toBe('scheduled');
      const at = Date.parse(email.scheduled_at ?? '');
      expect(at - before).toBeGreaterThanOrEqual(2 * 3600_000 - 1000);
      expect(at - before).toBeLessThan(2 * 3600_000 + 60_000);
      const iso = new Date(Date.now() + 29 * 86_400_000).toISOString();
      expect(expectAccepted(await send(body({ scheduled_at: iso }))).scheduled_at).toBe(iso);
    });
    it.each([
      ['more than 30 days ahead', 'in 31 days'],
      ['in the past', '2020-01-01T00:00:00Z'],
      ['unreadable', 'whenever suits'],
      ['not a calendar date', '2026-02-31T10:00:00Z'],
    ])('answers 400 when it is %s', async (_name, scheduled_at) => {
      const response = await send(body({ scheduled_at }));
      expectError(response, 400, 'invalid_request');
      expect(JSON.stringify(response.body.error?.details)).toContain('scheduled_at');
    });
    it('treats now as send now', async () => {
      const email = expectAccepted(await send(body({ scheduled_at: 'now' })));
      expect(email.status).toBe('queued');
      expect(email.scheduled_at).toBeNull();
    });
  });

  describe('credits and warm-up', () => {
    it('answers 402 when credits are short and overage is off, and writes nothing', async () => {
      await setCredits(h.stack.orm, orgId, 2);
      const before = await emailCount();
      expectError(await send(body({ to: ['a@example.com', 'b@example.com', 'c@example.com'] })), 402, 'payment_required');
      expect(await emailCount()).toBe(before);
      expectAccepted(await send(body({ to: ['a@example.com', 'b@example.com'] })));
      expect((await creditsOf(h.stack.orm, orgId)).balance).toBe(0);
      await setCredits(h.stack.orm, orgId, 1_000_000);
    });
    it('records overage past the balance when overage is on', async () => {
      await setCredits(h.stack.orm, orgId, 1, true);
      expectAccepted(await send(body({ to: ['a@example.com', 'b@example.com', 'c@example.com'] })));
      const credits = await creditsOf(h.stack.orm, orgId);
      expect([credits.balance, credits.overageUsed]).toEqual([0, 2]);
      await setCredits(h.stack.orm, orgId, 1_000_000, false);
    });
    it('never oversells credits to 20 concurrent sends', async () => {
      await setCredits(h.stack.orm, orgId, 10);
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => send(body({ to: `c${i}@example.com` }))));
      expect(
        responses.filter((r) => r.status === 202),
        JSON.stringify(responses.filter((r) => r.status !== 202 && r.status !== 402).map((r) => r.body)),
      ).toHaveLength(10);
      expect(
        responses.filter((r) => r.status === 402),
        JSON.stringify(responses.filter((r) => r.status !== 202 && r.status !== 402).map((r) => r.body)),
      ).toHaveLength(10);
      expect((await creditsOf(h.stack.orm, orgId)).balance).toBe(0);
      await setCredits(h.stack.orm, orgId, 1_000_000);
    });
    it('charges credits spread over shards exactly: 60 concurrent sends of 1 to 3 recipients against 100 credits', async () => {
      await setCredits(h.stack.orm, orgId, 100);
      const before = await scopeToOrg(h.stack.orm.em, orgId).find(TransactionalEmail, {}, { fields: ['id'] });
      const sizes = Array.from({ length: 60 }, (_, i) => 1 + (i % 3));
      const responses = await Promise.all(
        sizes.map((n, i) => send(body({ to: Array.from({ length: n }, (_, r) => `s${i}r${r}@example.com`) }))),
      );
      const odd = responses.filter((r) => r.status !== 202 && r.status !== 402);
      expect(odd, JSON.stringify(odd.map((r) => r.body))).toEqual([]);
      const taken = sizes.filter((_, i) => responses[i]!.status === 202).reduce((a, b) => a + b, 0);
      const { balance } = await creditsOf(h.stack.orm, orgId);
      // Nothing lost or oversold; a send was refused only when the whole balance could not pay it.
      expect(taken + balance).toBe(100);
      const refusedSmallest = Math.min(...sizes.filter((_, i) => responses[i]!.status === 402));
      expect(balance).toBeLessThan(refusedSmallest);
      const rows = await scopeToOrg(h.stack.orm.em, orgId).find(TransactionalEmail, { id: { $nin: before.map((e) => e.id) } });
      expect(rows.reduce((sum, e) => sum + e.creditsCharged, 0)).toBe(taken);
      expect(rows.every((e) => e.overageCharged === 0)).toBe(true);
      await setCredits(h.stack.orm, orgId, 1_000_000);
    });
    it('takes overage only past the whole balance, with 30 concurrent sends against 5 credits', async () => {
      await setCredits(h.stack.orm, orgId, 5, true);
      const { overageUsed: overageBefore } = await creditsOf(h.stack.orm, orgId);
      const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => send(body({ to: `o${i}@example.com` }))));
      expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 202));
      const credits = await creditsOf(h.stack.orm, orgId);
      expect([credits.balance, credits.overageUsed - overageBefore]).toEqual([0, 25]);
      const ids = responses.map((r) => (r.body.data as EmailRecord)._id);
      const rows = await scopeToOrg(h.stack.orm.em, orgId).find(TransactionalEmail, { id: { $in: ids } });
      expect([rows.reduce((sum, e) => sum + e.creditsCharged, 0), rows.reduce((sum, e) => sum + e.overageCharged, 0)]).toEqual([5, 25]);
      await setCredits(h.stack.orm, orgId, 1_000_000, false);
    });
    it('counts recipients against the domain daily cap and answers 429 DAILY_CAP_REACHED past it', async () => {
      const capped = await addSendingDomain(h.stack.orm, orgId, { dailyCap: 3 });
      const from = `o@${capped.domain}`;
      expectAccepted(await send(body({ from, to: ['a@example.com', 'b@example.com'] })));
      const over = await send(body({ from, to: ['c@example.com', 'd@example.com'] }));
      expectReason(over, 429, 'rate_limited', 'DAILY_CAP_REACHED');
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expectAccepted(await send(body({ from, to: 'c@example.com' })));
    });
    it('never oversells a daily cap to 20 concurrent sends', async () => {
      const capped = await addSendingDomain(h.stack.orm, orgId, { dailyCap: 10 });
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => send(body({ from: `o@${capped.domain}`, to: `k${i}@example.com` }))),
      );
      expect(responses.filter((r) => r.status === 202)).toHaveLength(10);
      expect(responses.filter((r) => r.status === 429)).toHaveLength(10);
    });
    it('checks a cap set during the day against what was counted on every shard before it', async () => {
      const domain = await addSendingDomain(h.stack.orm, orgId);
      const from = `o@${domain.domain}`;
      // Uncapped: five sends counted on random shards.
      for (let i = 0; i < 5; i += 1) expectAccepted(await send(body({ from, to: `d${i}@example.com` })));
      await h.stack.orm.em.fork().getConnection().execute('update domains set daily_cap = 7 where id = ?', [domain.id]);
      expectReason(
        await send(body({ from, to: ['x@example.com', 'y@example.com', 'z@example.com'] })),
        429,
        'rate_limited',
        'DAILY_CAP_REACHED',
      );
      expectAccepted(await send(body({ from, to: ['x@example.com', 'y@example.com'] })));
      expectReason(await send(body({ from, to: 'w@example.com' })), 429, 'rate_limited', 'DAILY_CAP_REACHED');
    });
  });

  describe('POST /api/v1/outbox/emails/{id}/cancel', () => {
    it('cancels a scheduled send, gives its credits back and refuses a second cancel with 409', async () => {
      await setCredits(h.stack.orm, orgId, 100);
      const email = expectAccepted(await send(body({ to: ['a@example.com', 'b@example.com'], scheduled_at: 'tomorrow at 9am' })));
      const cancelled = await h.request('POST', `/api/v1/outbox/emails/${email._id}/cancel`, { headers: idem() });
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
      expect((cancelled.body.data as EmailRecord).status).toBe('cancelled');
      expect((cancelled.body.data as EmailRecord).recipients.every((r) => r.status === 'cancelled')).toBe(true);
      expect((await creditsOf(h.stack.orm, orgId)).balance).toBe(100);
      expectReason(
        await h.request('POST', `/api/v1/outbox/emails/${email._id}/cancel`, { headers: idem() }),
        409,
        'conflict',
        'EMAIL_NOT_CANCELLABLE',
      );
      const rows = await scopeToOrg(h.stack.orm.em, orgId).count(EmailRecipient, { emailId: email._id, status: 'cancelled' });
      expect(rows).toBe(2);
      await setCredits(h.stack.orm, orgId, 1_000_000);
    });
  });
});
