import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { createWebhookFanOut } from '../../src/modules/webhooks/webhook-fan-out.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertEndpoint } from '../support/webhook-rows.ts';

let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack();
});
afterAll(() => stack?.close());

/** A Temporal client that accepts every wake-up: this file is about which deliveries are written. */
const acceptingTemporal = {
  withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
  workflow: { signalWithStart: () => Promise.resolve() },
} as never;

async function fanOut(): Promise<number> {
  const spec = createWebhookFanOut({ orm: stack.orm, temporal: acceptingTemporal, config: stack.config });
  return spec.pass({ signal: new AbortController().signal, warn: (what, error) => console.warn(what, error) });
}

async function deliveriesOf(eventId: string): Promise<string[]> {
  const rows = await stack.orm.em.fork().find(WebhookDelivery, { eventId }, ALL_TENANTS);
  return rows.map((row) => row.webhookId).sort();
}

describe('webhook fan-out of automation events', () => {
  it('delivers automation.webhook to the endpoint its data names only, whether or not it subscribed; other events by subscription', async () => {
    const { org } = await createOrg(stack.orm);
    const named = await insertEndpoint(stack.orm, org.id, { events: ['contact.created'] });
    const everything = await insertEndpoint(stack.orm, org.id, { events: ['*'] });
    const subscribed = await insertEndpoint(stack.orm, org.id, { events: ['automation.webhook', 'automation.run.completed'] });
    const disabled = await insertEndpoint(stack.orm, org.id, { events: ['*'], enabled: false });
    const { org: other } = await createOrg(stack.orm);
    const foreign = await insertEndpoint(stack.orm, other.id, { events: ['*'] });

    const em = scopeToOrg(stack.orm.em.fork(), org.id);
    const payload = { automation_id: 'a1', run_id: 'r1', step_id: 'notify', contact: null, payload: { plan: 'pro' } };
    const toNamed = recordEvent(em, org.id, 'automation.webhook', { ...payload, endpoint_id: named.id });
    const toDisabled = recordEvent(em, org.id, 'automation.webhook', { ...payload, endpoint_id: disabled.id });
    const toForeign = recordEvent(em, org.id, 'automation.webhook', { ...payload, endpoint_id: foreign.id });
    const completed = recordEvent(em, org.id, 'automation.run.completed', {
      run: { _id: 'r1' },
      automation: { _id: 'a1', name: 'Welcome' },
      endpoint_id: named.id,
    });
    await em.flush();

    expect(await fanOut()).toBeGreaterThanOrEqual(4);
    expect(await deliveriesOf(toNamed.id)).toEqual([named.id]);
    expect(await deliveriesOf(toDisabled.id)).toEqual([]);
    expect(await deliveriesOf(toForeign.id)).toEqual([]);
    expect(await deliveriesOf(completed.id)).toEqual([everything.id, subscribed.id].sort());
    const delivery = await stack.orm.em.fork().findOneOrFail(WebhookDelivery, { eventId: toNamed.id }, ALL_TENANTS);
    expect(delivery).toMatchObject({ orgId: org.id, eventType: 'automation.webhook', status: 'queued' });
  });
});
