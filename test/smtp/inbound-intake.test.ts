import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboundMessage } from '../../db/entities/index.ts';
import { readBlob } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { MAX_MESSAGE_BYTES, MAX_RECIPIENTS, type RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

interface SmtpFailure {
  code?: string;
  responseCode?: number;
  response?: string;
}

const DOMAIN = 'intake.example.com';
const logger = createLogger('silent');

/** Files under a directory, recursively (blobs and partial writes alike). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** A raw message of exactly `size` bytes, ending in CRLF (so the DATA stream carries exactly these bytes). */
function rawMessageOfSize(size: number, subject: string): Buffer {
  const head = Buffer.from(
    `From: big@remote.example\r\nTo: in@${DOMAIN}\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@remote.example>\r\n\r\n`,
  );
  const bodyLength = size - head.length;
  // Lines of 76 characters plus CRLF, as a real body would be.
  const line = Buffer.from(`${'x'.repeat(76)}\r\n`);
  const body = Buffer.alloc(bodyLength);
  for (let offset = 0; offset < bodyLength; offset += line.length) line.copy(body, offset, 0, Math.min(line.length, bodyLength - offset));
  body.write('\r\n', bodyLength - 2);
  return Buffer.concat([head, body]);
}

describe('inbound SMTP intake (DATA)', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let blobDir: string;
  const transport = () => createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
  const rows = () => stack.orm.em.fork().find(InboundMessage, {}, { orderBy: { createdAt: 'asc' } });

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-intake-'));
    stack = await createTestStack({ BLOB_DIR: blobDir, BOUNCE_DOMAIN: 'bounces.intake.test' });
    const { org } = await createOrg(stack.orm);
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: DOMAIN,
      verified: true,
    });
    smtp = await startSmtp(stack.config, logger);
  }, 60_000);

  afterAll(async () => {
    await smtp.close();
    await stack.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('stores the raw message and records it before answering 250 with its id', async () => {
    const returnPath = createVerpSigner(stack.config.encryptionKey!).address('0123456789abcdef01234567', 'bounces.intake.test');
    const info = (await transport().sendMail({
      envelope: { from: 'sender@remote.example', to: [`in@${DOMAIN}`, returnPath] },
      raw: `From: sender@remote.example\r\nTo: in@${DOMAIN}\r\nSubject: stored first\r\n\r\nhello\r\n`,
    })) as SentMessageInfo;
    const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
    expect(info.response, info.response).toMatch(/^250 /);
    const row = (await rows()).find((candidate) => candidate.id === id);
    expect(row).toMatchObject({
      status: 'received',
      mailFrom: 'sender@remote.example',
      rcptTo: [`in@${DOMAIN}`, returnPath],
      remoteAddress: expect.stringMatching(/127\.0\.0\.1/) as unknown,
      tls: false,
    });
    const today = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
    expect(row!.blobKey).toBe(`inbound/${today}/${id}.eml`);
    const bytes = await readBlob(createFsBlobStore(blobDir), row!.blobKey);
    expect(bytes.toString()).toContain('Subject: stored first');
    expect(row!.sizeBytes).toBe(bytes.length);
    expect(row!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it(`accepts ${MAX_RECIPIENTS} recipients and refuses the next with 452 4.5.3`, async () => {
    const to = Array.from({ length: MAX_RECIPIENTS + 1 }, (_, index) => `r${index}@${DOMAIN}`);
    const info = (await transport().sendMail({ from: 'many@remote.example', to, subject: 'many', text: 'hi' })) as SentMessageInfo & {
      rejectedErrors?: SmtpFailure[];
    };
    expect(info.accepted).toHaveLength(MAX_RECIPIENTS);
    expect(info.rejected).toEqual([`r${MAX_RECIPIENTS}@${DOMAIN}`]);
    expect(info.rejectedErrors?.[0]?.responseCode).toBe(452);
    expect(info.rejectedErrors?.[0]?.response).toMatch(/4\.5\.3/);
  });

  it('refuses unknown domains with 550 5.1.1 at RCPT', async () => {
    const failure = (await transport()
      .sendMail({ from: 'a@remote.example', to: 'x@unknown.example', text: 'x' })
      .catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.code).toBe('EENVELOPE');
    expect(failure.responseCode).toBe(550);
    expect(failure.response).toMatch(/5\.1\.1/);
  });

  it('accepts a message of exactly 25 MB', async () => {
    const info = (await transport().sendMail({
      envelope: { from: 'big@remote.example', to: `in@${DOMAIN}` },
      raw: rawMessageOfSize(MAX_MESSAGE_BYTES, 'exactly-limit'),
    })) as SentMessageInfo;
    expect(info.response).toMatch(/^250 /);
    const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')![1];
    expect((await rows()).find((row) => row.id === id)?.sizeBytes).toBe(MAX_MESSAGE_BYTES);
  }, 60_000);

  it('refuses a message of 25 MB + 1 byte with 552 5.3.4 and keeps nothing', async () => {
    const before = await rows();
    const filesBefore = await filesUnder(blobDir);
    const failure = (await transport()
      .sendMail({
        envelope: { from: 'big@remote.example', to: `in@${DOMAIN}` },
        raw: rawMessageOfSize(MAX_MESSAGE_BYTES + 1, 'over-limit'),
      })
      .catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.responseCode, failure.response).toBe(552);
    expect(failure.response).toMatch(/5\.3\.4/);
    expect(await rows()).toHaveLength(before.length);
    expect(await filesUnder(blobDir)).toEqual(filesBefore);
  }, 60_000);
});

describe('inbound SMTP intake when the blob store fails', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let parent: string;
  let blobDir: string;

  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'herald-intake-broken-'));
    blobDir = join(parent, 'blobs');
    stack = await createTestStack({ BLOB_DIR: blobDir });
    const { org } = await createOrg(stack.orm);
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: DOMAIN,
      verified: true,
    });
    // The store passes its start-up check, then breaks: a file where the blob directory was, so
    // every write fails (a disk gone read-only or unmounted under a running process).
    smtp = await startSmtp(stack.config, logger);
    await rm(blobDir, { recursive: true, force: true });
    await writeFile(blobDir, 'not a directory');
  }, 60_000);

  afterAll(async () => {
    await smtp?.close();
    await stack?.close();
    await rm(parent, { recursive: true, force: true });
  });

  const send = () =>
    createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true }).sendMail({
      from: 'sender@remote.example',
      to: `in@${DOMAIN}`,
      subject: 'retry me',
      text: 'x'.repeat(100_000),
    }) as Promise<SentMessageInfo>;

  it('answers 451 4.3.0 and records nothing, then accepts the same message once the store is back', async () => {
    const failure = (await send().catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.code).toBe('EMESSAGE');
    expect(failure.responseCode).toBe(451);
    expect(failure.response).toMatch(/4\.3\.0/);
    expect(await stack.orm.em.fork().count(InboundMessage, {})).toBe(0);

    await rm(blobDir);
    await mkdir(blobDir);
    const info = await send();
    expect(info.response).toMatch(/^250 /);
    const [row] = await stack.orm.em.fork().find(InboundMessage, {});
    expect(row?.status).toBe('received');
    expect(await filesUnder(blobDir)).toEqual([join(blobDir, ...row!.blobKey.split('/'))]);
  });

  it('answers 451 and deletes the stored blob when the row cannot be recorded, then accepts once the database is back', async () => {
    const connection = stack.orm.em.getConnection();
    const before = await filesUnder(blobDir);
    await connection.execute('alter table inbound_messages rename to inbound_messages_away');
    try {
      const failure = (await send().catch((e: unknown) => e)) as SmtpFailure;
      expect(failure.responseCode).toBe(451);
      expect(await filesUnder(blobDir)).toEqual(before);
    } finally {
      await connection.execute('alter table inbound_messages_away rename to inbound_messages');
    }
    expect((await send()).response).toMatch(/^250 /);
    expect(await filesUnder(blobDir)).toHaveLength(before.length + 1);
  });

  it('answers 451 when no blob store is configured', async () => {
    const noStore = await startSmtp(stack.config, logger, { blobs: null });
    try {
      const failure = (await createTransport({ host: '127.0.0.1', port: noStore.port, secure: false, ignoreTLS: true })
        .sendMail({ from: 'a@remote.example', to: `in@${DOMAIN}`, text: 'x' })
        .catch((e: unknown) => e)) as SmtpFailure;
      expect(failure.responseCode).toBe(451);
    } finally {
      await noStore.close();
    }
  });
});

/** Connects and resolves with the server's first reply line. */
function greeting(port: number): Promise<{ line: string; close(): void }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('data', (chunk) => resolve({ line: chunk.toString().split('\r\n')[0]!, close: () => socket.destroy() }));
    socket.once('error', reject);
  });
}

describe('inbound SMTP intake: STARTTLS and connection limit', () => {
  let stack: TestStack;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-intake-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=mx.herald.test',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    stack = await createTestStack({
      BLOB_DIR: join(dir, 'blobs'),
      SMTP_TLS_KEY_FILE: join(dir, 'key.pem'),
      SMTP_TLS_CERT_FILE: join(dir, 'cert.pem'),
    });
    const { org } = await createOrg(stack.orm);
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: DOMAIN,
      verified: true,
    });
  }, 60_000);

  afterAll(async () => {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('offers STARTTLS with the configured certificate and records that the message came over TLS', async () => {
    const smtp = await startSmtp(stack.config, logger);
    try {
      const transport = createTransport({
        host: '127.0.0.1',
        port: smtp.port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
      });
      const info = (await transport.sendMail({
        from: 'tls@remote.example',
        to: `in@${DOMAIN}`,
        subject: 'over tls',
        text: 'x',
      })) as SentMessageInfo;
      const id = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
      expect((await stack.orm.em.fork().findOneOrFail(InboundMessage, { id: id! })).tls).toBe(true);
    } finally {
      await smtp.close();
    }
  });

  it('refuses a connection past the connection limit with 421, and takes it again once one closes', async () => {
    const smtp = await startSmtp(stack.config, logger, { limits: { maxClients: 1 } });
    try {
      const first = await greeting(smtp.port);
      expect(first.line).toMatch(/^220 /);
      const second = await greeting(smtp.port);
      second.close();
      expect(second.line).toMatch(/^421 /);
      first.close();
      // The server notices the close asynchronously; a free slot then greets with 220.
      const third = await waitFor(
        'a free connection slot',
        async () => {
          const attempt = await greeting(smtp.port);
          attempt.close();
          return attempt.line.startsWith('220 ') ? attempt : undefined;
        },
        10_000,
        50,
      );
      expect(third.line).toMatch(/^220 /);
    } finally {
      await smtp.close();
    }
  });
});
