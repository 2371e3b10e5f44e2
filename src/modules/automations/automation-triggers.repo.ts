/**
 * The reads trigger firing needs besides enrolment itself (automation-runs.repo.ts): which
 * triggers a workspace's active automations listen on (so a change no automation listens for
 * costs one indexed read), the segments those triggers name, the contact an opened, clicked or
 * answered email belongs to, and which contacts have runs waiting for an event. Kysely through
 * `workspaceDb`, or SQL text that names the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';
import type { TriggerType } from './automation-definition.ts';

/** The (trigger type, key) pairs of a workspace's active automations. */
export async function findActiveTriggers(
  em: EntityManager,
  orgId: string,
  types: readonly TriggerType[],
): Promise<{ type: string; key: string | null }[]> {
  const rows = await workspaceDb(em, orgId)
    .selectFrom('automations')
    .select(['trigger_type', 'trigger_key'])
    .distinct()
    .where('status', '=', 'active')
    .where('trigger_type', 'in', [...types])
    .execute();
  return rows.map((row) => ({ type: row.trigger_type, key: row.trigger_key ?? null }));
}

/** The workspace's segments among `ids`, with their rule (type and tags). */
export async function findSegmentRules(
  em: EntityManager,
  orgId: string,
  ids: readonly string[],
): Promise<{ id: string; type: string; tags: string[] }[]> {
  if (ids.length === 0) return [];
  return workspaceDb(em, orgId)
    .selectFrom('segments')
    .select(['id', 'type', 'tags'])
    .where('id', 'in', [...ids])
    .execute();
}

/** min(x.email) as contacts store addresses (contacts.fns.ts normalizeEmail: trimmed, the domain lower-cased). */
const NORMALIZED_ADDRESS = `substring(btrim(min(x.email)) from '^(.*@)') || lower(substring(btrim(min(x.email)) from '[^@]*$'))`;

/** An email as engagement triggers see it: what it was sent from and whose it is. */
export interface EngagedEmail {
  email_id: string;
  org_id: string;
  template_id: string | null;
  broadcast_id: string | null;
  /** The broadcast's or run's contact, else the workspace's contact whose address is the email's only recipient. */
  contact_id: string | null;
}

/** Templates, broadcasts and contacts of some emails (each of its own workspace). */
export async function findEngagedEmails(
  em: EntityManager,
  emails: readonly { org_id: string; email_id: string }[],
): Promise<EngagedEmail[]> {
  if (emails.length === 0) return [];
  return em.execute<EngagedEmail[]>(
    `select e.id as email_id, e.org_id, e.template_id, e.broadcast_id,
            coalesce(e.contact_id,
                     (select r.contact_id from automation_runs r where r.id = e.automation_run_id and r.org_id = e.org_id),
                     (select c.id from contacts c
                       where c.org_id = e.org_id
                         and c.email = (select ${NORMALIZED_ADDRESS} from email_recipients x
                                         where x.email_id = e.id and x.org_id = e.org_id having count(*) = 1))) as contact_id
       from jsonb_to_recordset(:emails::jsonb) as m(org_id text, email_id text)
       join transactional_emails e on e.id = m.email_id and e.org_id = m.org_id`,
    { emails: JSON.stringify(emails) },
  );
}

/** The email an inbound message answers and the contacts it concerns. */
export interface RepliedEmail {
  email_id: string;
  /** The broadcast's or run's contact the email went to. */
  email_contact_id: string | null;
  /** The workspace's contact with the reply's sender address. */
  sender_contact_id: string | null;
}

/**
 * The email Herald sent that a message answers: the first of its In-Reply-To / References
 * candidates (most specific first) that is the Message-ID of an email of the workspace.
 */
export async function findRepliedEmail(
  em: EntityManager,
  orgId: string,
  candidates: readonly string[],
  sender: string,
): Promise<RepliedEmail | null> {
  if (candidates.length === 0) return null;
  const rows = await em.execute<RepliedEmail[]>(
    `select e.id as email_id,
            coalesce(e.contact_id, (select r.contact_id from automation_runs r where r.id = e.automation_run_id and r.org_id = e.org_id)) as email_contact_id,
            (select c.id from contacts c where c.org_id = e.org_id and c.email = :sender) as sender_contact_id
       from transactional_emails e
      where e.org_id = :org and e.message_id = any(:candidates::text[])
      order by array_position(:candidates::text[], e.message_id::text)
      limit 1`,
    { org: orgId, candidates: arrayLiteral(candidates), sender: normalizeEmail(sender) },
  );
  return rows[0] ?? null;
}

/** Which of the contacts have an active run waiting for one of `keys`: `contactId key` pairs. */
export async function findWaitingRuns(
  em: EntityManager,
  orgId: string,
  contactIds: readonly string[],
  keys: readonly string[],
): Promise<{ contact_id: string; waiting_for: string }[]> {
  if (contactIds.length === 0 || keys.length === 0) return [];
  const rows = await workspaceDb(em, orgId)
    .selectFrom('automation_runs')
    .select(['contact_id', 'waiting_for'])
    .distinct()
    .where('status', '=', 'active')
    .where('contact_id', 'in', [...new Set(contactIds)])
    .where('waiting_for', 'in', [...new Set(keys)])
    .execute();
  return rows.flatMap((row) => (row.waiting_for ? [{ contact_id: row.contact_id, waiting_for: row.waiting_for }] : []));
}
