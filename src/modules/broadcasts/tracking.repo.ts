/**
 * The statements of open and click tracking: recording a hit of a broadcast message (the
 * workspace and broadcast read from the message itself), and the judging pass's reads. Raw SQL
 * is outside the tenant filter: each statement names the workspace or says why it spans them.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import type { TrackingHitKind, TrackingHitState } from '../../../db/entities/index.ts';

/** Records a pending hit of email `emailId`; false when no such email has that kind of tracking on. */
export async function insertHit(
  em: EntityManager,
  hit: { emailId: string; kind: TrackingHitKind; url: string | null; userAgent: string | null },
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `/* all workspaces: a tracking link names its message, whose row gives the workspace */
     insert into tracking_hits (id, org_id, email_id, broadcast_id, kind, url, user_agent, state, at)
     select :id, e.org_id, e.id, e.broadcast_id, :kind, :url, :userAgent, 'pending', now()
       from transactional_emails e
      where e.id = :emailId and (case when :kind = 'open' then e.track_opens else e.track_clicks end)
     returning id`,
    { id: newId(), emailId: hit.emailId, kind: hit.kind, url: hit.url, userAgent: hit.userAgent },
  );
  return rows.length > 0;
}

export interface HitRow {
  id: string;
  org_id: string;
  email_id: string;
  broadcast_id: string | null;
  kind: TrackingHitKind;
  url: string | null;
  at_ms: number;
  state: TrackingHitState;
}

/** Locks up to `limit` pending hits at least `settleMs` old, oldest first (other passes skip them). In a transaction. */
export async function claimPendingHits(em: EntityManager, settleMs: number, limit: number): Promise<HitRow[]> {
  return em.execute<HitRow[]>(
    `/* all workspaces: the judging pass serves every workspace */
     select id, org_id, email_id, broadcast_id, kind, url, (extract(epoch from at) * 1000)::float8 as at_ms, state
       from tracking_hits
      where state = 'pending' and at < now() - make_interval(secs => :settle)
      order by at, id
      limit :limit
      for update skip locked`,
    { settle: settleMs / 1000, limit },
  );
}

/** Every hit of these messages (of their workspaces), the burst check's neighbours. */
export async function hitsOfMessages(em: EntityManager, messages: readonly { org_id: string; email_id: string }[]): Promise<HitRow[]> {
  return em.execute<HitRow[]>(
    `select h.id, h.org_id, h.email_id, h.broadcast_id, h.kind, h.url, (extract(epoch from h.at) * 1000)::float8 as at_ms, h.state
       from tracking_hits h
       join jsonb_to_recordset(:messages::jsonb) as m(org_id text, email_id text) on h.org_id = m.org_id and h.email_id = m.email_id`,
    { messages: JSON.stringify(messages) },
  );
}

export interface EngagedEmail {
  email_id: string;
  recipient: string;
  domain: string;
  message_id: string;
  broadcast_id: string | null;
  from_email: string;
  from_name: string | null;
  subject: string;
  opened: boolean;
  clicked: boolean;
}

/**
 * The recipient (the first To address of an email with several: a message's pixel and links are
 * shared by all its recipients), domain, event fields and already-counted engagement of these
 * messages.
 */
export async function engagementOf(em: EntityManager, messages: readonly { org_id: string; email_id: string }[]): Promise<EngagedEmail[]> {
  return em.execute<EngagedEmail[]>(
    `select distinct on (e.id) e.id as email_id, r.email as recipient, e.domain, e.message_id, e.broadcast_id, e.from_email, e.from_name, e.subject,
            exists (select 1 from email_events x where x.org_id = e.org_id and x.email_id = e.id and x.type = 'opened') as opened,
            exists (select 1 from email_events x where x.org_id = e.org_id and x.email_id = e.id and x.type = 'clicked') as clicked
       from jsonb_to_recordset(:messages::jsonb) as m(org_id text, email_id text)
       join transactional_emails e on e.id = m.email_id and e.org_id = m.org_id
       join email_recipients r on r.email_id = e.id and r.org_id = e.org_id
      order by e.id, (r.kind = 'to') desc, r.id`,
    { messages: JSON.stringify(messages) },
  );
}

/** Sets the judged state of hits (ids of one state per call). */
export async function setHitStates(em: EntityManager, states: ReadonlyMap<string, TrackingHitState>): Promise<void> {
  const rows = [...states].map(([id, state]) => ({ id, state }));
  if (rows.length === 0) return;
  await em.execute(
    `/* all workspaces: hits were claimed by id across workspaces */
     update tracking_hits h set state = s.state
       from jsonb_to_recordset(:rows::jsonb) as s(id text, state text)
      where h.id = s.id`,
    { rows: JSON.stringify(rows) },
  );
}
