/**
 * Acceptance's read of the sending domain and the suppression check: an address may not be sent
 * to when it is on the workspace's suppression list for every stream or for the send's stream,
 * or belongs to a contact that bounced, complained or was suppressed; and adding an address to
 * that list. Raw SQL is outside the
 * tenant filter, so every clause names the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SuppressionReason } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { executePrepared } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { THREAD_LOCK_SQL } from '../inbox/threading.ts';

/** The sending domain of an email as acceptance checks it. */
export interface SendingDomain {
  id: string;
  domain: string;
  status: string;
  reputationState: string;
  dailyCap: number | null;
  /** The scope of the workspace's reputation pause ('broadcast' or 'all'), null while it may send. */
  workspacePause?: string | null;
}

/** The send's stream as acceptance reads it: the custom stream's kind (null: none by that name) and the stream's daily budget. */
export interface StreamRow {
  storedKind: string | null;
  dailyCap: number | null;
}

/** The row of domainCheckStatement. */
export interface DomainCheckRow {
  id: string | null;
  domain: string;
  status: string;
  reputation_state: string;
  daily_cap: number | null;
  workspace_pause: string | null;
  suppressed: string[] | null;
  stream_kind: string | null;
  stream_cap: number | null;
  claimed?: string | null;
}

/** What acceptance's read found (domainCheckOf). */
export interface DomainCheck {
  domain: SendingDomain | null;
  suppressed: Set<string>;
  stream: StreamRow;
  claimed: boolean;
}

/**
 * Acceptance's read: the workspace's sending domain by name (null when it has none by that
 * name) and which of `addresses` may not be sent to, in one round trip. With `threadLock` (a
 * threadLockKey), the same statement takes the transaction's thread lock, so that the
 * acceptance statement after it sees the conversation as of the lock. With `claim` (a CTE
 * `idem_claim`), the same statement claims the request's Idempotency-Key first; `claimed` says
 * whether it did. Read by domainCheckOf.
 */
export function domainCheckStatement(
  orgId: string,
  domainName: string,
  addresses: readonly string[],
  stream: string,
  options: { threadLock?: string; claim?: SqlFragment } = {},
): SqlFragment {
  return {
    sql: `${options.claim ? `with ${options.claim.sql}\n     ` : ''}select d.id, d.domain, d.status, d.reputation_state, d.daily_cap,
            (select o.reputation_pause->>'scope' from organizations o where o.id = :org and o.reputation_paused_at is not null) as workspace_pause,
            array(select email from suppressions where org_id = :org and email = any(:addresses::text[]) and stream in ('', :stream)
                  union
                  select email from contacts where org_id = :org and email = any(:addresses::text[]) and status in ('bounced', 'complained', 'suppressed')) as suppressed,
            s.kind as stream_kind, s.daily_cap as stream_cap
            ${options.threadLock ? `, ${THREAD_LOCK_SQL}` : ''}
            ${options.claim ? ', (select id from idem_claim) as claimed' : ''}
       from (select 1) one
       left join domains d on d.org_id = :org and d.domain = :domain
       left join message_streams s on s.org_id = :org and s.name = :stream`,
    params: {
      ...options.claim?.params,
      org: orgId,
      addresses: [...addresses],
      domain: domainName,
      stream,
      ...(options.threadLock ? { threadLock: options.threadLock } : {}),
    },
  };
}

/** The domain, suppressed addresses, stream and claim domainCheckStatement's row says. */
export function domainCheckOf(row: DomainCheckRow | undefined): DomainCheck {
  const domain = row?.id
    ? {
        id: row.id,
        domain: row.domain,
        status: row.status,
        reputationState: row.reputation_state,
        dailyCap: row.daily_cap,
        workspacePause: row.workspace_pause,
      }
    : null;
  return {
    domain,
    suppressed: new Set(row?.suppressed ?? []),
    stream: { storedKind: row?.stream_kind ?? null, dailyCap: row?.stream_cap ?? null },
    claimed: Boolean(row?.claimed),
  };
}

/** domainCheckStatement run in `em`'s transaction (prepared), read by domainCheckOf. */
export async function findDomainAndSuppressed(
  em: EntityManager,
  orgId: string,
  domainName: string,
  addresses: readonly string[],
  stream: string,
  options: { threadLock?: string; claim?: SqlFragment } = {},
): Promise<DomainCheck> {
  const rows = await executePrepared<DomainCheckRow>(em, domainCheckStatement(orgId, domainName, addresses, stream, options));
  return domainCheckOf(rows[0]);
}

/**
 * Adds `email` to the workspace's suppression list for `source.stream` (absent: every stream;
 * first reason wins per scope) and, when it was not on it yet, writes the change to the audit
 * trail in the same statement; `apiKeyId` is the caller
 * when one asked for it (null: Herald, for a bounce or a complaint). Whether it was added.
 */
export async function suppressAddress(
  em: EntityManager,
  orgId: string,
  email: string,
  reason: SuppressionReason,
  source: { emailId?: string | null; detail?: string | null; apiKeyId?: string | null; stream?: string | null } = {},
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `with added as (
       insert into suppressions (id, org_id, email, reason, email_id, detail, stream, created_at)
       values (:id, :org, :email, :reason, :emailId, :detail, :stream, now()) on conflict (org_id, email, stream) do nothing
       returning org_id, email, reason, email_id, detail, stream, created_at
     )
     insert into suppression_changes (id, org_id, email, action, reason, api_key_id, email_id, detail, stream, created_at)
     select :changeId, org_id, email, 'added', reason, :apiKeyId, email_id, detail, stream, created_at from added
     returning id`,
    {
      id: newId(),
      changeId: newId(),
      org: orgId,
      email,
      reason,
      emailId: source.emailId ?? null,
      detail: source.detail?.slice(0, 1024) ?? null,
      apiKeyId: source.apiKeyId ?? null,
      stream: source.stream ?? '',
    },
  );
  return rows.length > 0;
}
