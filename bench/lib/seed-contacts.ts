import { withClient } from './seed.ts';

/**
 * Contacts, segments and suppressions of a workspace for the dashboard's benchmark, set-based:
 * `count` contacts over the last 365 days (`user<n>@example.com`, the addresses the seeded
 * emails went to; one of five first names; 20 tags round robin, `vip` on 1 %, unsubscribed 1 %),
 * four segments (every contact, tag `vip`, tag `tag3`, and a static one of 10,000 members) and
 * 20,000 suppressions.
 */
export async function seedContacts(
  databaseUrl: string,
  orgId: string,
  count: number,
): Promise<{ segmentIds: string[]; newestContactId: string }> {
  const contactId = (n: number) => `c${n.toString(16).padStart(23, '0')}`;
  await withClient(databaseUrl, async (client) => {
    await client.query(
      `insert into contacts (id, org_id, email, first_name, last_name, company, tags, custom_fields, status, created_at, updated_at)
       select 'c' || lpad(to_hex(g), 23, '0'), $1, 'user' || g || '@example.com',
              (array['Ada', 'Grace', 'Alan', 'Linus', 'Margaret'])[1 + g % 5], 'Name' || g, 'Company ' || (g % 1000),
              case when g % 100 = 0 then array['tag' || (g % 20), 'vip'] else array['tag' || (g % 20)] end,
              jsonb_build_object('plan', case when g % 2 = 0 then 'pro' else 'free' end),
              case when g % 100 = 1 then 'unsubscribed' else 'active' end,
              now() - ((g::double precision) / $2) * interval '365 days', now()
         from generate_series(1, $2::int) as g`,
      [orgId, count],
    );
    await client.query(
      `insert into segments (id, org_id, name, description, type, tags, created_at, updated_at) values
         ('5e0000000000000000000001', $1, 'Everyone', '', 'all', '{}', now(), now()),
         ('5e0000000000000000000002', $1, 'VIP', '', 'tag', '{vip}', now(), now()),
         ('5e0000000000000000000003', $1, 'Tag 3', '', 'tag', '{tag3}', now(), now()),
         ('5e0000000000000000000004', $1, 'Hand-picked', '', 'static', '{}', now(), now())`,
      [orgId],
    );
    await client.query(
      `insert into segment_members (segment_id, contact_id, org_id, created_at)
       select '5e0000000000000000000004', 'c' || lpad(to_hex(g * 7), 23, '0'), $1, now() from generate_series(1, least(10000, $2::int / 7)) as g`,
      [orgId, count],
    );
    await client.query(
      `insert into suppressions (id, org_id, email, reason, detail, created_at)
       select 's' || lpad(to_hex(g), 23, '0'), $1, 'gone' || g || '@example.net',
              (array['hard_bounce', 'complaint', 'unsubscribe', 'manual'])[1 + g % 4]::text, null, now() - g * interval '1 minute'
         from generate_series(1, 20000) as g`,
      [orgId],
    );
    await client.query('vacuum analyze contacts, segments, segment_members, suppressions');
  });
  return {
    segmentIds: ['5e0000000000000000000001', '5e0000000000000000000002', '5e0000000000000000000003', '5e0000000000000000000004'],
    newestContactId: contactId(1),
  };
}
