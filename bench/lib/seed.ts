import pg from 'pg';

/**
 * `count` contacts in one workspace, one INSERT … SELECT over generate_series: 2 to 4 tags, a
 * custom field, 1 in 17 unsubscribed, created one second apart (newest first is i = 1), at
 * millisecond precision like the rows the api writes.
 */
const SEED_CONTACTS_SQL = `
  insert into contacts (id, org_id, email, first_name, last_name, company, tags, custom_fields, status, created_at, updated_at)
  select substr(md5($1::text || i::text), 1, 24), $1, 'contact' || i || '@example.com', 'First' || i, 'Last' || i,
         'Company ' || (i % 500),
         array_remove(array[case when i % 5 < 3 then 'customer' end, case when i % 10 < 3 then 'newsletter' end,
                            'region-' || (i % 20), 'cohort-' || (i % 1000)], null),
         jsonb_build_object('plan', case when i % 3 = 0 then 'pro' else 'free' end, 'seats', i % 50),
         case when i % 17 = 0 then 'unsubscribed' else 'active' end,
         date_trunc('milliseconds', now()) - i * interval '1 second', now()
    from generate_series(1, $2::int) as i`;

/** Runs `fn` with one connection to `databaseUrl`. */
export async function withClient<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Seeds contacts and analyzes the table (what autovacuum does after a bulk load). */
export async function seedContacts(databaseUrl: string, orgId: string, count: number): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    await client.query(SEED_CONTACTS_SQL, [orgId, count]);
    await client.query('vacuum analyze contacts');
  });
}

/** The events: 20 % transactional, the rest spread over the broadcasts in time order. */
const SEED_EVENTS_SQL = `
  insert into email_events (id, org_id, type, email_id, broadcast_id, recipient, domain, occurred_at, created_at)
  select lpad(to_hex(g), 24, '0'),
         $1,
         case when r < 35 then 'sent' when r < 67 then 'delivered' when r < 85 then 'opened'
              when r < 93 then 'clicked' when r < 96 then 'bounced' when r < 97 then 'complained'
              else 'unsubscribed' end,
         lpad(to_hex(g / 3), 24, '0'),
         case when g % 5 = 0 then null
              else 'b' || lpad(to_hex(((g - 1)::bigint * $4 / $2)::int), 23, '0') end,
         'user' || (g * 31 % 200000) || '@example.com',
         ($5::text[])[1 + g % 3],
         now() - (g::double precision / $2) * make_interval(days => $3),
         now()
    from generate_series(1, $2::int) as g,
         lateral (select (g::bigint * 7919) % 100 as r) as pick`;

/** The daily rollup of those events: the backfill of the migration that created email_event_counts. */
const SEED_COUNTS_SQL = `
  insert into email_event_counts (org_id, day, broadcast_id, domain, type, count)
  select org_id, (occurred_at at time zone 'UTC')::date, coalesce(broadcast_id, ''), domain, type, count(*)
    from email_events
   where org_id = $1
   group by 1, 2, 3, 4, 5`;

const SEED_BROADCASTS_SQL = `
  insert into broadcasts (id, org_id, name, subject, from_name, from_email, segment_ids, status, metrics, created_at, updated_at)
  select 'b' || lpad(to_hex(i), 23, '0'), $1, 'Campaign ' || i, 'Subject ' || i, 'Bench', 'news@bench.test',
         '{}', 'sent', '{}', now() - make_interval(days => $3) + i * make_interval(days => $3) / $2, now()
    from generate_series(0, $2::int - 1) as i`;

const SEED_DOMAINS_SQL = `
  insert into domains (id, org_id, domain, status, is_default, source, dkim_selector, dkim_public_key,
                       dkim_private_key_encrypted, reputation_state, dns_check, created_at, updated_at)
  select substr(md5($1 || i::text), 1, 24), $1, ($2::text[])[i], 'verified', i = 1, 'operator', 'herald', 'bench', 'bench',
         'healthy', '{}', now(), now()
    from generate_series(1, cardinality($2::text[])) as i`;

export const METRICS_DOMAINS = ['mail.bench.test', 'news.bench.test', 'bench.test'];

/** Verified sending/receiving domains of a workspace. */
export async function seedDomains(databaseUrl: string, orgId: string, domains: string[]): Promise<void> {
  await withClient(databaseUrl, (client) => client.query(SEED_DOMAINS_SQL, [orgId, domains]));
}

/**
 * `events` email events over the last 120 days for one workspace (300 broadcasts, three
 * sending domains), their daily rollup, then VACUUM ANALYZE.
 */
export async function seedEmailEvents(databaseUrl: string, orgId: string, events: number): Promise<void> {
  const days = 120;
  const broadcasts = 300;
  await withClient(databaseUrl, async (client) => {
    await client.query(SEED_DOMAINS_SQL, [orgId, METRICS_DOMAINS]);
    await client.query(SEED_BROADCASTS_SQL, [orgId, broadcasts, days]);
    await client.query(SEED_EVENTS_SQL, [orgId, events, days, broadcasts, METRICS_DOMAINS]);
    await client.query(SEED_COUNTS_SQL, [orgId]);
    await client.query('vacuum analyze');
  });
}
