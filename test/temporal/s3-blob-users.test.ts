import { randomBytes } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { simpleParser } from 'mailparser';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxMessage } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestBucket, type TestBucket } from '../support/s3.ts';

/**
 * The blob store's users on S3 (BLOB_STORE=s3, a SeaweedFS bucket with signed requests): the
 * api, worker and smtp processes share nothing but the bucket, PostgreSQL and Temporal.
 */
describe('blob users on an S3 bucket (api, worker and smtp share only the bucket)', () => {
  let bucket: TestBucket;
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let smtp: RunningSmtp;
  let orgId: string;
  const local = (uploadUrl: string) => {
    const url = new URL(uploadUrl);
    return `${h.api.url}${url.pathname}${url.search}`;
  };

  beforeAll(async () => {
    bucket = await createTestBucket();
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    h = await startApiHarness(
      {
        ...bucket.env,
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
        SMTP_RELAY_FINAL_HOP: 'true',
        BOUNCE_DOMAIN: 'bounces.s3.test',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    smtp = await startSmtp(h.stack.config, createLogger('silent'));
    orgId = h.workspace.org.id;
    await setCredits(h.stack.orm, orgId, 100);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await smtp?.close();
    await h?.close();
    await sink?.close();
    await bucket?.drop();
  });

  it('delivers an uploaded attachment byte for byte, its bytes read from the bucket', async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const bytes = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(300_000)]);
    const slot = await h.request('POST', '/api/v1/outbox/attachments', {
      body: { filename: 'statement.pdf', content_type: 'application/pdf', size_bytes: bytes.length },
      headers: idem(),
    });
    expect(slot.status, JSON.stringify(slot.body)).toBe(201);
    const upload = slot.body.data as { attachment_id: string; upload_url: string; required_headers: Record<string, string> };
    const put = await fetch(local(upload.upload_url), { method: 'PUT', headers: upload.required_headers, body: bytes });
    expect(put.status, await put.clone().text()).toBeLessThan(300);
    expect((await bucket.leftovers()).filter((key) => key.includes(upload.attachment_id))).toHaveLength(1);

    const sent = await h.request('POST', '/api/v1/outbox/emails', {
      body: {
        from: `Billing <billing@${domain.domain}>`,
        to: ['alice@example.com'],
        subject: 'Your statement',
        text: 'Attached.',
        attachments: [{ attachment_id: upload.attachment_id }],
      },
      headers: idem(),
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const email = sent.body.data as { message_id: string };
    const message = await sink.waitFor((m) => m.messageId === email.message_id, 60_000);
    const parsed = await simpleParser(message.raw);
    expect(parsed.attachments.map((a) => a.filename)).toEqual(['statement.pdf']);
    expect(parsed.attachments[0]!.content.equals(bytes)).toBe(true);
  });

  it('stores an inbound message and its attachment in the bucket and serves the attachment through the API', async () => {
    const domains = createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey });
    await domains.addDomain({ orgId, domain: 'inbound-s3.example', verified: true });
    const attachment = randomBytes(200_000);
    const transport = createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
    const info = (await transport.sendMail({
      from: 'Bob <bob@sender.example>',
      to: 'support@inbound-s3.example',
      subject: 'Photos',
      text: 'See attached.',
      attachments: [{ filename: 'photo.bin', content: attachment, contentType: 'application/octet-stream' }],
    })) as { response: string };
    const inboundId = /queued as ([a-f0-9]{24})/.exec(info.response)?.[1];
    expect(inboundId, info.response).toBeDefined();

    const inbox = await waitFor(
      `inbound ${inboundId} to be ingested`,
      async () => {
        const row = await scopeToOrg(h.stack.orm.em.fork(), orgId).findOne(InboxMessage, { inboundId: inboundId! });
        return row?.attachmentsReady ? row : undefined;
      },
      90_000,
      200,
    );
    const detail = await h.request('GET', `/api/v1/inbox/messages/${inbox.id}`);
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
    const [stored] = (detail.body.data as { attachments: { id: string; filename: string; size_bytes: number }[] }).attachments;
    expect(stored).toMatchObject({ filename: 'photo.bin', size_bytes: attachment.length });
    const download = await fetch(`${h.api.url}/api/v1/inbox/messages/${inbox.id}/attachments/${stored!.id}`, {
      headers: { authorization: `Bearer ${h.workspace.key}` },
    });
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(attachment)).toBe(true);
    const keys = await bucket.leftovers();
    expect(
      keys.some((key) => key.includes(inboundId!)),
      keys.join('\n'),
    ).toBe(true);
  });

  it('imports contacts from a CSV uploaded into the bucket, with its error report', async () => {
    const created = await h.request('POST', '/api/v1/contacts/imports', { body: { filename: 'people.csv' }, headers: idem() });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const view = created.body.data as { _id: string; upload_url: string };
    const csv = 'email,first_name\nana@example.com,Ana\nnot-an-address,Bad\nbo@example.org,Bo\n';
    const put = await fetch(local(view.upload_url), { method: 'PUT', headers: { 'content-type': 'text/csv' }, body: csv });
    expect(put.status, await put.clone().text()).toBe(202);
    const done = await waitFor(
      `import ${view._id} to finish`,
      async () => {
        const response = await h.request('GET', `/api/v1/contacts/imports/${view._id}`);
        const state = response.body.data as { status: string; created: number; skipped: number };
        return state.status === 'completed' || state.status === 'failed' ? state : undefined;
      },
      90_000,
      200,
    );
    expect(done).toMatchObject({ status: 'completed', created: 2, skipped: 1 });
    const errors = await fetch(`${h.api.url}/api/v1/contacts/imports/${view._id}/errors`, {
      headers: { authorization: `Bearer ${h.workspace.key}` },
    });
    expect(errors.status).toBe(200);
    const rows = parse<Record<string, string>>(await errors.text(), { columns: true });
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows[0])).toContain('not-an-address');
    const contacts = await h.request('GET', '/api/v1/contacts?limit=10');
    const emails = (contacts.body.data as { email: string }[]).map((contact) => contact.email).sort();
    expect(emails).toEqual(['ana@example.com', 'bo@example.org']);
  });
});
