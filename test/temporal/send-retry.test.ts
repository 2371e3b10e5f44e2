import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmailEvent, Event } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addSendingDomain, creditsOf, setCredits } from '../support/sending.ts';

type EmailRecord = { _id: string; status: string; recipients: { status: string; attempts: number; last_response: string | null }[] };

/** A relay that never answers: every attempt defers, and the retry window (compressed here) ends in email.failed. */
describe('a transactional send whose relay stays unreachable', () => {
  let h: ApiHarness;
  let worker: RunningWorker;

  beforeAll(async () => {
    const closedPort = await freePort();
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${closedPort}`,
        EMAIL_RETRY_SCHEDULE: '0s,200ms',
        EMAIL_RETRY_WINDOW: '1s',
        SEND_HANDOFF_WAIT_MS: '5000',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
  });

  it('answers 202 (deferred, not rejected), retries within the window, then fails every recipient and gives the credits back', async () => {
    const orgId = h.workspace.org.id;
    const domain = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 10);
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain.domain}`, to: ['a@example.com', 'b@example.com'], subject: 'Retry', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const id = (response.body.data as EmailRecord)._id;
    const deadline = Date.now() + 30_000;
    let email: EmailRecord;
    for (;;) {
      email = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
      if (email.status !== 'sending' && email.status !== 'queued') break;
      if (Date.now() > deadline) throw new Error(`still ${email.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(email.status).toBe('failed');
    expect(email.recipients.every((r) => r.status === 'failed' && r.attempts >= 2)).toBe(true);
    expect(email.recipients[0]?.last_response).toMatch(/^retries_exhausted: /);
    const em = scopeToOrg(h.stack.orm.em, orgId);
    expect(await em.count(Event, { type: 'email.failed', data: { email_id: id } })).toBe(2);
    expect(await em.count(Event, { type: 'email.deferred', data: { email_id: id } })).toBeGreaterThanOrEqual(4);
    expect(await em.count(EmailEvent, { emailId: id, type: 'failed' })).toBe(2);
    expect((await creditsOf(h.stack.orm, orgId)).balance).toBe(10);
  });
});
