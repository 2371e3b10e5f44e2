import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, Contact, EmailRecipient, InboxMessage, Template, TransactionalEmail } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { parseDefinition } from '../../src/modules/automations/automation-definition.ts';
import { unique } from '../support/factories.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

/**
 * Automatic answers are no replies: an out-of-office or any message marked as sent by a machine
 * arrives over real SMTP and lands in the inbox, but starts no `email.replied` run and ends no
 * wait for a reply; a person's reply to the same email does both.
 */
describe('auto-replies and email.replied (real SMTP → worker → ingestion)', () => {
  let h: InboundHarness;

  beforeAll(async () => {
    h = await startInboundHarness();
    await h.startWorker();
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  /** An email Herald sent to a contact from acme.example, an email.replied automation, and a run waiting for a reply to the email. */
  async function sentAndWaiting() {
    const em = h.inbox();
    const address = `${unique('ann')}@example.com`;
    const contact = em.create(Contact, { orgId: h.orgId, email: address });
    const template = em.create(Template, { orgId: h.orgId, name: unique('t'), status: 'published', subject: 'News', html: '<p>News</p>' });
    const email = em.create(TransactionalEmail, {
      orgId: h.orgId,
      domainId: newId(),
      domain: 'acme.example',
      fromEmail: 'news@acme.example',
      subject: 'News',
      text: 'Hello',
      messageId: `${newId()}.0@acme.example`,
      status: 'sent',
      quotaDay: new Date().toISOString().slice(0, 10),
      templateId: template.id,
      contactId: contact.id,
    });
    em.create(EmailRecipient, { orgId: h.orgId, emailId: email.id, kind: 'to', email: address });
    await em.flush();
    const parsed = parseDefinition({
      trigger: { type: 'email.replied' },
      reentry: { mode: 'always' },
      start: 'listen',
      steps: [
        { id: 'listen', type: 'wait', duration: '3d', next: 'done' },
        { id: 'done', type: 'exit' },
      ],
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    const automation = await createAutomationsAdmin({ orm: h.stack.orm }).createAutomation({
      orgId: h.orgId,
      name: unique('replied'),
      definition: parsed.definition,
      status: 'active',
    });
    const waiting = newId();
    await h.stack.orm.em.fork().execute(
      `insert into automation_runs (id, org_id, automation_id, definition_id, contact_id, status, step_id, due_at, waiting_for, context, created_at, updated_at)
       select ?, a.org_id, a.id, a.definition_id, ?, 'active', 'listen', now() + interval '3 days', ?, '{}', now(), now()
         from automations a where a.id = ? and a.org_id = ?`,
      [waiting, contact.id, `email.replied:${email.id}`, automation.id, h.orgId],
    );
    return { address, email, automationId: automation.id, waiting };
  }

  const runsOf = (automationId: string) => h.inbox().find(AutomationRun, { automationId }, { orderBy: { createdAt: 'asc', id: 'asc' } });

  it('an out-of-office (headers or subject) lands in the inbox but neither starts email.replied nor ends the wait', async () => {
    const { address, email, automationId, waiting } = await sentAndWaiting();
    const answer = (subject: string, headers: Record<string, string>) =>
      h.send({
        from: address,
        to: 'news@acme.example',
        subject,
        text: 'I am away until Monday.',
        inReplyTo: `<${email.messageId}>`,
        references: [`<${email.messageId}>`],
        headers,
      });
    const automatic = [
      await answer('Re: News', { 'Auto-Submitted': 'auto-replied' }),
      await answer('Re: News', { 'X-Autoreply': 'yes' }),
      await answer('Re: News', { 'X-Autorespond': 'Vacation' }),
      await answer('Re: News', { Precedence: 'bulk' }),
      await answer('Re: News', { Precedence: 'auto_reply' }),
      await answer('Automatic reply: News', {}),
      await answer('Out of Office: News', {}),
    ];
    for (const inboundId of automatic) {
      const message = await h.settled(inboundId);
      // In the inbox, as a message or (where the report classifier recognises it) an auto_reply.
      expect(message).toMatchObject({ direction: 'inbound', inReplyTo: email.messageId });
      expect(['message', 'auto_reply']).toContain(message.kind);
    }
    const runs = await runsOf(automationId);
    expect(runs.map((run) => run.id)).toEqual([waiting]);
    expect(runs[0]).toMatchObject({ status: 'active', waitingFor: `email.replied:${email.id}` });
    expect(runs[0]!.dueAt!.getTime()).toBeGreaterThan(Date.now() + 2 * 24 * 3600_000);

    // A person's answer to the same email (Auto-Submitted: no is a person's) is a reply.
    await h.settled(await answer('Re: News', { 'Auto-Submitted': 'no' }));
    const after = await runsOf(automationId);
    expect(after).toHaveLength(2);
    const resumed = after.find((run) => run.id === waiting)!;
    expect(resumed.waitingFor).toBeNull();
    expect(await h.inbox().count(InboxMessage, { inReplyTo: email.messageId })).toBe(automatic.length + 1);
  }, 120_000);
});
