import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestCertificates } from '../support/test-certificates.ts';
import { startTlsRelay } from '../support/tls-relay.ts';

type EmailRecord = {
  _id: string;
  status: string;
  recipients: { email: string; status: string; attempts: number; last_response: string | null }[];
};
type LogEntry = { level: string; msg: string; reason?: string; relay?: string };

/**
 * A relay like a stock Postfix on loopback: STARTTLS with a self-signed certificate. Under
 * SMTP_RELAY_TLS=verify the recipient stays deferred with the TLS reason and the worker warns
 * once however often it retries; a worker with the loopback default (opportunistic) then
 * delivers the same email over TLS.
 */
describe('a transactional send through a relay with a self-signed certificate', () => {
  const certs = createTestCertificates();
  let h: ApiHarness;
  let relay: Awaited<ReturnType<typeof startTlsRelay>>;
  let worker: RunningWorker | undefined;
  const logs: LogEntry[] = [];

  beforeAll(async () => {
    relay = await startTlsRelay({ certificate: certs.selfSigned('mail.localdomain') });
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
        SMTP_RELAY_TLS: 'verify',
        EMAIL_RETRY_SCHEDULE: '0s,200ms',
        EMAIL_RETRY_WINDOW: '1h',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await relay?.close();
    certs.remove();
  });

  async function waitForEmail(id: string, done: (email: EmailRecord) => boolean): Promise<EmailRecord> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const email = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
      if (done(email)) return email;
      if (Date.now() > deadline) throw new Error(`gave up waiting: ${JSON.stringify(email)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('defers with the TLS reason under verify, warns once, then is delivered once the policy is opportunistic', async () => {
    const logger = createLogger('info', {}, (line) => logs.push(JSON.parse(line) as LogEntry));
    worker = await startWorker(h.stack.config, logger);
    const orgId = h.workspace.org.id;
    const domain = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 10);
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain.domain}`, to: ['reader@example.com'], subject: 'Through a local Postfix', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const id = (response.body.data as EmailRecord)._id;

    const deferred = await waitForEmail(id, (email) => (email.recipients[0]?.attempts ?? 0) >= 3);
    expect(deferred.status).toBe('sending');
    expect(deferred.recipients[0]).toMatchObject({
      status: 'deferred',
      last_response:
        'TLS with the relay failed (policy verify): its certificate was refused: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
    });
    expect(relay.received).toHaveLength(0);
    const warnings = logs.filter((entry) => entry.msg.startsWith('relay TLS failed'));
    expect(warnings, JSON.stringify(logs.filter((entry) => entry.level !== 'info'))).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', relay: `127.0.0.1:${relay.port}`, reason: deferred.recipients[0]?.last_response });
    expect(logs.find((entry) => entry.msg === 'outbound relay')).toMatchObject({ tls: 'verify (SMTP_RELAY_TLS)' });

    await worker.shutdown();
    worker = await startWorker({ ...h.stack.config, relayTls: { policy: 'opportunistic', source: 'loopback' } }, createLogger('silent'));
    const sent = await waitForEmail(id, (email) => email.status !== 'sending');
    expect(sent.status, JSON.stringify(sent)).toBe('sent');
    expect(sent.recipients[0]?.status).toBe('sent');
    expect(relay.received.map((message) => [message.to, message.secure])).toEqual([[['reader@example.com'], true]]);
  });
});
