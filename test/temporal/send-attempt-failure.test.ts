import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addSendingDomain, creditsOf, setCredits } from '../support/sending.ts';

type EmailRecord = { _id: string; status: string; recipients: { status: string; last_response: string | null }[] };

/**
 * An attempt that throws (not an SMTP answer: here the domain's DKIM key cannot be decrypted, as
 * after a wrong HERALD_ENCRYPTION_KEY) is retried when its claim lapses, and once the retry window
 * has closed the email ends failed instead of being retried forever.
 */
describe('a transactional send whose every attempt throws', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;

  beforeAll(async () => {
    relay = await startCountingRelay();
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
        EMAIL_RETRY_SCHEDULE: '0s,200ms',
        EMAIL_RETRY_WINDOW: '1s',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await relay?.close();
  });

  it('ends failed with its credits back after the window, having sent nothing', async () => {
    const orgId = h.workspace.org.id;
    const domain = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 10);
    await h.stack.orm.em
      .getConnection()
      .execute(`update domains set dkim_private_key_encrypted = 'not-a-sealed-key' where id = ?`, [domain.id]);
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain.domain}`, to: 'a@example.com', subject: 'Throws', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const id = (response.body.data as EmailRecord)._id;
    // The first attempt throws; its claim lapses after 30 s; the next one finds the window closed.
    const deadline = Date.now() + 90_000;
    let email: EmailRecord;
    for (;;) {
      email = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
      if (email.status !== 'sending' && email.status !== 'queued') break;
      if (Date.now() > deadline) throw new Error(`still ${email.status}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(email.status).toBe('failed');
    expect(email.recipients[0]).toMatchObject({ status: 'failed' });
    expect(email.recipients[0]?.last_response).toMatch(/^retries_exhausted: /);
    expect(relay.total()).toBe(0);
    expect((await creditsOf(h.stack.orm, orgId)).balance).toBe(10);
  }, 120_000);
});
