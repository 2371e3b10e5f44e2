/**
 * The inbound queue: inbound_messages rows while `received`, due at `next_attempt_at` (receipt,
 * a retry's time, or the lapse of an attempt's lease), claimed by the inbound actor's drain with
 * `FOR UPDATE SKIP LOCKED`; and the actor's drain lease (actor_leases). Raw messages belong to
 * no workspace until routed, so no statement here needs the workspace condition.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { arrayLiteral, queryPrepared } from '../../../db/prepared.ts';
import { INBOUND_INTAKE_LEASE } from '../../../workflows/inbound-intake.ts';
import { INBOUND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import { DEFAULT_REPORT_LOCAL_PART } from '../dmarc/dmarc.fns.ts';
import { RECEIVING_DOMAINS_OF_RCPT_SQL, receivingDomainOf, type ReceivingDomain, type ReceivingDomainRow } from './routing.repo.ts';

const DUE = `status = 'received' and next_attempt_at <= now()`;

/** A claimed raw message: its id and the number of this attempt (1 for the first). */
export interface ClaimedInbound {
  id: string;
  attempt: number;
  /** When it fell due (receipt or a retry time), epoch ms. */
  dueMs: number;
  /** What the attempt reads, the attempt already counted by the claim (as startIngestAttempt would). */
  raw: RawInbound;
}

/** A raw message as the SMTP intake records it. */
export interface ReceivedInbound {
  id: string;
  blobKey: string;
  sizeBytes: number;
  sha256: string;
  mailFrom: string;
  rcptTo: readonly string[];
  remoteAddress: string | null;
  clientHostname: string | null;
  heloName: string | null;
  tls: boolean;
  receivedAt: Date;
}

/**
 * Records received raw messages, each due at once, and pokes the inbound actor's drain (the
 * NOTIFY is delivered at the commit), in one statement and so one implicit transaction: every
 * row is committed, or none. Answers whether the drain runs (then it needs no wake-up). A named
 * prepared statement (db/prepared.ts queryPrepared): PostgreSQL parses it once per connection
 * and the values are bound, not inlined into the text by MikroORM on every call.
 */
export async function recordReceived(em: EntityManager, messages: readonly ReceivedInbound[]): Promise<{ draining: boolean }> {
  const column = (value: (message: ReceivedInbound) => string | null) => arrayLiteral(messages.map(value));
  const [row] = await queryPrepared<{ draining: boolean }>(em, {
    sql: `with recorded as (
       insert into inbound_messages (id, blob_key, size_bytes, sha256, mail_from, rcpt_to, remote_address, client_hostname, helo_name,
                                     tls, status, attempts, next_attempt_at, created_at, updated_at)
       select r.id, r.blob_key, r.size_bytes::int, r.sha256, r.mail_from, r.rcpt_to::text[], r.remote_address, r.client_hostname, r.helo_name,
              r.tls::boolean, 'received', 0, r.at::timestamptz, r.at::timestamptz, r.at::timestamptz
         from unnest(:ids::text[], :blobKeys::text[], :sizes::text[], :sha256s::text[], :mailFroms::text[], :rcptTos::text[],
                     :remoteAddresses::text[], :clientHostnames::text[], :heloNames::text[], :tlss::text[], :ats::text[])
              as r(id, blob_key, size_bytes, sha256, mail_from, rcpt_to, remote_address, client_hostname, helo_name, tls, at)
       returning id)
     select pg_notify('${INBOUND_WAKE_CHANNEL}', :lease::text) as notified,
            coalesce((select lease_until > now() from actor_leases where name = :lease::text), false) as draining
       from (select count(*) from recorded) as written`,
    params: {
      ids: column((m) => m.id),
      blobKeys: column((m) => m.blobKey),
      sizes: column((m) => String(m.sizeBytes)),
      sha256s: column((m) => m.sha256),
      mailFroms: column((m) => m.mailFrom),
      rcptTos: column((m) => arrayLiteral(m.rcptTo)),
      remoteAddresses: column((m) => m.remoteAddress),
      clientHostnames: column((m) => m.clientHostname),
      heloNames: column((m) => m.heloName),
      tlss: column((m) => String(m.tls)),
      ats: column((m) => m.receivedAt.toISOString()),
      lease: INBOUND_INTAKE_LEASE,
    },
  });
  return { draining: row?.draining ?? false };
}

/** The raw message's columns an ingestion attempt reads. */
export interface RawInbound {
  id: string;
  blobKey: string;
  sizeBytes: number;
  mailFrom: string;
  rcptTo: string[];
  remoteAddress: string | null;
  heloName: string | null;
  createdAt: Date;
  /**
   * The proven domains among the recipients' domains, read with the raw row (the claim's one
   * statement) so routing needs no statement of its own; absent: routing reads them.
   */
  receivingDomains?: ReceivingDomain[];
}

/** A raw row's columns as the statements below return them. */
interface RawRow {
  id: string;
  blob_key: string;
  size_bytes: number;
  mail_from: string;
  rcpt_to: string[];
  remote_address: string | null;
  helo_name: string | null;
  created_at: Date;
}

const RAW_COLUMNS = ['id', 'blob_key', 'size_bytes', 'mail_from', 'rcpt_to', 'remote_address', 'helo_name', 'created_at'];

function rawOf(row: RawRow): RawInbound {
  return {
    id: row.id,
    blobKey: row.blob_key,
    sizeBytes: row.size_bytes,
    mailFrom: row.mail_from,
    rcptTo: row.rcpt_to,
    remoteAddress: row.remote_address,
    heloName: row.helo_name,
    createdAt: new Date(row.created_at),
  };
}

/**
 * Starts an ingestion attempt on a raw message that is still `received`, in one statement:
 * counts it (`attempts` + 1, updated_at moves; a claim reports the attempt number from it) and
 * answers what the attempt reads. Null when the message is settled (ingested or failed) or gone.
 */
export async function startIngestAttempt(em: EntityManager, inboundId: string): Promise<RawInbound | null> {
  const [row] = await em.execute<RawRow[]>(
    `update inbound_messages set attempts = attempts + 1, updated_at = now() where id = ? and status = 'received'
     returning ${RAW_COLUMNS.join(', ')}`,
    [inboundId],
  );
  return row ? rawOf(row) : null;
}

/** The update that settles a raw message as ingested, without its `where`. */
export const MARK_INGESTED_SQL = `update inbound_messages set status = 'ingested', ingested_at = now(), last_error = null, updated_at = now()`;

/**
 * Ends ingestion of a raw message successfully. Run inside the transaction that records its
 * last inbox message when nothing else is left to do, so a recorded message is never visible
 * while its raw row still waits to be settled.
 */
export async function markInboundIngested(em: EntityManager, inboundId: string): Promise<void> {
  await em.execute(`${MARK_INGESTED_SQL} where id = :inboundId`, { inboundId }, 'run');
}

export function createInboundQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  /** The open raw messages and when the next one falls due. */
  async function readState(): Promise<{ next_due_ms: number | null; open: number }> {
    const [row] = await db().execute<{ next_due_ms: number | null; open: number }[]>(
      `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms, count(*)::int as open
         from inbound_messages where status = 'received'`,
    );
    return row ?? { next_due_ms: null, open: 0 };
  }

  return {
    /** Marks the actor's drain as running until `seconds` from now. */
    async leaseActor(seconds: number): Promise<void> {
      await db().execute(
        `insert into actor_leases (name, lease_until) values (?, now() + make_interval(secs => ?))
         on conflict (name) do update set lease_until = excluded.lease_until`,
        [INBOUND_INTAKE_LEASE, seconds],
        'run',
      );
    },

    async releaseActor(): Promise<void> {
      await db().execute(`update actor_leases set lease_until = null where name = ?`, [INBOUND_INTAKE_LEASE], 'run');
    },

    /**
     * Claims up to `limit` due raw messages (oldest due first); each becomes due again at the end
     * of its lease unless its attempt settles it or records a retry time, so a dead worker's
     * message is taken again. The claim starts each attempt as startIngestAttempt does (counts
     * it, moves updated_at) and reads what it needs, with the proven domains among its
     * recipients' (routing.repo.ts findReceivingDomains, for every claimed row at once).
     * `othersDueMs`: when the earliest open row not claimed here falls due (epoch ms; null: none),
     * as nextDue would answer; undefined when nothing was claimed. A named prepared statement, as
     * recordReceived's.
     */
    async claim(limit: number, leaseSeconds: number): Promise<{ items: ClaimedInbound[]; othersDueMs: number | null | undefined }> {
      const rows = await queryPrepared<
        RawRow & { attempts: number; due_ms: number; receiving: ReceivingDomainRow[]; others_due_ms: number | null }
      >(orm.em.fork(), {
        sql: `with due as (select id, next_attempt_at as due_at from inbound_messages
                       where ${DUE} order by next_attempt_at, id limit :limit::int for update skip locked)
         update inbound_messages m
            set next_attempt_at = now() + make_interval(secs => :leaseSeconds::float8), attempts = m.attempts + 1, updated_at = now()
           from due
          where m.id = due.id
         returning ${RAW_COLUMNS.map((column) => `m.${column}`).join(', ')}, m.attempts, (extract(epoch from due.due_at) * 1000)::float8 as due_ms,
                   ${RECEIVING_DOMAINS_OF_RCPT_SQL} as receiving,
                   (select (extract(epoch from min(o.next_attempt_at)) * 1000)::float8 from inbound_messages o
                     where o.status = 'received' and o.id not in (select id from due)) as others_due_ms`,
        params: { limit, leaseSeconds, rdReportLocalPart: DEFAULT_REPORT_LOCAL_PART },
      });
      const items = rows.map((row) => ({
        id: row.id,
        attempt: row.attempts,
        dueMs: row.due_ms,
        raw: { ...rawOf(row), receivingDomains: row.receiving.map(receivingDomainOf) },
      }));
      return { items, othersDueMs: rows[0]?.others_due_ms };
    },

    /** Extends the leases of the messages whose attempts are still running. */
    async extendLeases(ids: readonly string[], leaseSeconds: number): Promise<void> {
      if (ids.length === 0) return;
      await db().execute(
        `update inbound_messages set next_attempt_at = now() + make_interval(secs => ?) where id in (?) and status = 'received'`,
        [leaseSeconds, [...ids]],
        'run',
      );
    },

    /** After a failed attempt that is not the last: due again in `delayMs`, with the error shown. */
    async retryLater(id: string, delayMs: number, error: string): Promise<void> {
      await db().execute(
        `update inbound_messages set next_attempt_at = now() + make_interval(secs => ?), last_error = ?, updated_at = now()
          where id = ? and status = 'received'`,
        [delayMs / 1000, error.slice(0, 1024), id],
        'run',
      );
    },

    state: readState,

    /** Epoch ms when the next open raw message falls due, or null. */
    async nextDue(): Promise<number | null> {
      return (await readState()).next_due_ms;
    },

    /** Whether raw messages have been due for longer than `marginMs` with no drain running (the reconciler's look). */
    async isStranded(marginMs: number): Promise<boolean> {
      const [row] = await db().execute<{ stranded: boolean }[]>(
        `select exists (select 1 from inbound_messages where status = 'received' and next_attempt_at < now() - make_interval(secs => ?))
            and not coalesce((select lease_until > now() from actor_leases where name = ?), false) as stranded`,
        [marginMs / 1000, INBOUND_INTAKE_LEASE],
      );
      return row?.stranded ?? false;
    },
  };
}

export type InboundQueue = ReturnType<typeof createInboundQueue>;
