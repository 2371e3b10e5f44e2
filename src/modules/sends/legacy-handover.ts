import type { MikroORM } from '@mikro-orm/postgresql';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import type { DeliverResult } from './delivery.ts';
import { findEmailStatus } from './handoff.repo.ts';

/**
 * A sendEmail run (`email:<id>`, the design before sending-domain actors) started before an
 * upgrade asks for an attempt: the email is already a row of its domain's queue (the migration
 * made every open email due), so the domain's actor is woken to own it and the run is told the
 * row's status. Nothing is sent from here, so nothing is sent twice; an open email keeps the
 * run waiting on its own schedule until the actor settles it, and a scheduled, queued or final
 * one ends it.
 */
export async function handOverLegacySend(
  orm: MikroORM,
  input: { orgId: string; emailId: string },
  wake: (domains: SendDomainInput[]) => Promise<void>,
): Promise<DeliverResult> {
  const row = await findEmailStatus(orm.em, input.orgId, input.emailId);
  if (!row) return { status: 'failed', handoff: { outcome: 'accepted', response: null } };
  if (row.status === 'scheduled' || row.status === 'queued' || row.status === 'sending') {
    await wake([{ orgId: input.orgId, domainId: row.domain_id }]);
  }
  return { status: row.status, handoff: { outcome: row.status === 'cancelled' ? 'cancelled' : 'accepted', response: null } };
}
