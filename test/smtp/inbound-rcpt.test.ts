import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type Transporter } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

interface SmtpFailure {
  code?: string;
  responseCode?: number;
  response?: string;
  rejected?: string[];
}

describe('inbound SMTP listener', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let transport: Transporter;
  let blobDir: string;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), 'herald-rcpt-'));
    stack = await createTestStack({ BOUNCE_DOMAIN: 'bounces.herald.test', BLOB_DIR: blobDir });
    const { org } = await createOrg(stack.orm);
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: 'inbound.example.com',
      verified: true,
    });
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: 'pending.example.com',
    });
    smtp = await startSmtp(stack.config, createLogger('silent'));
    transport = createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
  });
  afterAll(async () => {
    transport.close();
    await smtp.close();
    await stack.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  const message = (to: string) => ({ from: 'sender@remote.example', to, subject: 'hi', text: 'hello' });

  it('announces the 25 MB size limit', async () => {
    const { createConnection } = await import('node:net');
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = createConnection(smtp.port, '127.0.0.1');
      let data = '';
      let greeted = false;
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (!greeted && data.startsWith('220')) {
          greeted = true;
          socket.write('EHLO client.example\r\n');
        }
        if (/\r\n250 [^\r\n]*\r\n$/.test(data)) {
          socket.end('QUIT\r\n');
          resolve(data);
        }
      });
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^250[- ]SIZE 26214400$/m);
  });

  it('refuses recipients on domains no workspace owns with 550 5.1.1', async () => {
    const failure = (await transport.sendMail(message('someone@unknown.example')).catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.code).toBe('EENVELOPE');
    expect(failure.responseCode).toBe(550);
    expect(failure.response).toMatch(/5\.1\.1/);
  });

  it('refuses the bounces. host of a domain no workspace owns', async () => {
    const failure = (await transport
      .sendMail(message('bounce+0123456789abcdef01234567@bounces.unknown.example'))
      .catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.responseCode).toBe(550);
  });

  it('refuses a domain a workspace added but has not verified, as an unknown domain', async () => {
    const failure = (await transport.sendMail(message('support@pending.example.com')).catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.responseCode).toBe(550);
    expect(failure.response).toMatch(/5\.1\.1 .*unknown domain/);
  });

  it.each([
    'bounce+abc@bounces.herald.test',
    'bounce+0123456789abcdef01234567@bounces.herald.test',
    'bounce+0123456789abcdef01234567@bounces.inbound.example.com',
    'bounce+0123456789abcdef01234567-00000000000000000000@bounces.inbound.example.com',
    'postmaster@bounces.inbound.example.com',
  ])('refuses %s at RCPT: a bounce address Herald did not sign', async (to) => {
    const failure = (await transport.sendMail(message(to)).catch((e: unknown) => e)) as SmtpFailure;
    expect(failure.code).toBe('EENVELOPE');
    expect(failure.responseCode).toBe(550);
    expect(failure.response).toMatch(/unknown bounce address/);
  });

  it.each(['reply@inbound.example.com', 'REPLY@Inbound.Example.COM', 'signed'])(
    'accepts %s at RCPT (a verified workspace domain, or a return path Herald signed)',
    async (to) => {
      const address =
        to === 'signed'
          ? createVerpSigner(stack.config.encryptionKey!).address('0123456789abcdef01234567', 'bounces.inbound.example.com')
          : to;
      const failure = (await transport.sendMail(message(address)).catch((e: unknown) => e)) as SmtpFailure;
      // RCPT passed: the refusal, if any, comes at DATA, not at the envelope.
      expect(failure.code).not.toBe('EENVELOPE');
    },
  );

  it('answers DATA with 250 and the id of the recorded message', async () => {
    const info = (await transport.sendMail(message('reply@inbound.example.com'))) as { response: string };
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as [a-f0-9]{24}$/);
  });
});
