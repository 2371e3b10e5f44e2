/**
 * The transactional send queue: transactional_emails rows of one sending domain, due at
 * `next_attempt_at` (acceptance, `scheduled_at`, a deferral's retry time, or the lapse of an
 * attempt's lease), claimed by the domain actor's drain with `FOR UPDATE SKIP LOCKED`; and the
 * domain's drain lease. Raw SQL is outside the tenant filter, so every statement names the
 * workspace itself.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

const OPEN = `status in ('scheduled', 'queued', 'sending')`;

export interface ClaimedEmail {
  id: string;
  /** Attempts made so far: this claim is attempt `handoff_attempts + 1`. */
  handoff_attempts: number;
  /** When the first attempt began (this claim's time for a first attempt), epoch ms. */
  first_attempt_ms: number;
  /** When it fell due (acceptance, scheduled_at, a retry time), epoch ms. */
  due_ms: number;
}

export function createDomainQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  return {
    /** Marks the domain's drain as running until `seconds` from now; false when the domain is gone. */
    async leaseDomain(orgId: string, domainId: string, seconds: number): Promise<boolean> {
      const rows = await db().execute<{ id: string }[]>(
        `update domains set drain_lease_until = now() + make_interval(secs => ?) where id = ? and org_id = ? returning id`,
        [seconds, domainId, orgId],
      );
      return rows.length > 0;
    },

    async releaseDomain(orgId: string, domainId: string): Promise<void> {
      await db().execute(`update domains set drain_lease_until = null where id = ? and org_id = ?`, [domainId, orgId], 'run');
    },

    /** Whether the domain's drain is running (its lease is held). */
    async isDraining(orgId: string, domainId: string): Promise<boolean> {
      const rows = await db().execute<{ id: string }[]>(
        `select id from domains where id = ? and org_id = ? and drain_lease_until > now()`,
        [domainId, orgId],
      );
      return rows.length > 0;
    },

    /**
     * Claims up to `limit` due emails (oldest due first): each becomes due again at the end of
     * its lease unless the attempt records a new time, so a dead worker's email is taken again.
     */
    async claim(orgId: string, domainId: string, limit: number, leaseSeconds: number): Promise<ClaimedEmail[]> {
      return db().execute<ClaimedEmail[]>(
        `update transactional_emails e
            set next_attempt_at = now() + make_interval(secs => ?), first_attempt_at = coalesce(e.first_attempt_at, now())
           from (select id, next_attempt_at as due_at from transactional_emails
                  where domain_id = ? and org_id = ? and ${OPEN} and next_attempt_at <= now()
                  order by next_attempt_at, id
                  limit ? for update skip locked) due
          where e.id = due.id
         returning e.id, e.handoff_attempts, (extract(epoch from e.first_attempt_at) * 1000)::float8 as first_attempt_ms,
                   (extract(epoch from due.due_at) * 1000)::float8 as due_ms`,
        [leaseSeconds, domainId, orgId, limit],
      );
    },

    /** Extends the leases of the emails whose attempts are still running. */
    async extendLeases(orgId: string, ids: readonly string[], leaseSeconds: number): Promise<void> {
      if (ids.length === 0) return;
      await db().execute(
        `update transactional_emails set next_attempt_at = now() + make_interval(secs => ?) where id in (?) and org_id = ? and ${OPEN}`,
        [leaseSeconds, [...ids], orgId],
        'run',
      );
    },

    /** After an attempt: due again at `at` (deferred recipients remain), or off the queue (null: settled). */
    async reschedule(orgId: string, id: string, at: Date | null): Promise<void> {
      await db().execute(
        `update transactional_emails set next_attempt_at = ? where id = ? and org_id = ?`,
        [at, id, orgId],
        'run',
      );
    },

    /** Epoch ms when the domain's next open email falls due, or null. */
    async nextDue(orgId: string, domainId: string): Promise<number | null> {
      const [row] = await db().execute<{ next_due_ms: number | null }[]>(
        `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms
           from transactional_emails where domain_id = ? and org_id = ? and ${OPEN}`,
        [domainId, orgId],
      );
      return row?.next_due_ms ?? null;
    },

    /** The domain's open emails and when the next one falls due. */
    async state(orgId: string, domainId: string): Promise<{ next_due_ms: number | null; open: number }> {
      const [row] = await db().execute<{ next_due_ms: number | null; open: number }[]>(
        `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms, count(*)::int as open
           from transactional_emails where domain_id = ? and org_id = ? and ${OPEN}`,
        [domainId, orgId],
      );
      return row ?? { next_due_ms: null, open: 0 };
    },

    /** Domains with emails due for longer than `marginMs` and no drain running (the reconciler's look). */
    async findStranded(marginMs: number, limit: number): Promise<{ id: string; org_id: string }[]> {
      return db().execute<{ id: string; org_id: string }[]>(
        `select s.domain_id as id, s.org_id
           from (select distinct domain_id, org_id from transactional_emails
                  where ${OPEN} and next_attempt_at < now() - make_interval(secs => ?)) s
           join domains d on d.id = s.domain_id and d.org_id = s.org_id
          where d.drain_lease_until is null or d.drain_lease_until < now()
          order by s.domain_id
          limit ?`,
        [marginMs / 1000, limit],
      );
    },
  };
}

export type DomainQueue = ReturnType<typeof createDomainQueue>;
