/**
 * 11. The dashboard's pages over a large workspace: 100,000 transactional emails (one recipient
 * each), 1,000,000 email events over 120 days (with their daily rollup), 1,000,000 contacts with
 * segments and suppressions (bench/lib/seed-contacts.ts), one signed-in
 * person, a real `herald api` process. Each page is loaded once cold (its first load) and then
 * one request at a time for the run's duration; the figure is the slowest page's first load and
 * p95 against the 300 ms target (wall time over loopback: the server's time plus a loopback
 * round trip).
 */
import type { BenchContext } from './lib/context.ts';
import { seedEmailEvents, withClient } from './lib/seed.ts';
import { seedContacts } from './lib/seed-contacts.ts';
import { dashboardSession, firstLoads, pageLoader, pageTargetSummary, timePages } from './lib/page-loads.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

/** `count` sent emails of the workspace over the last 120 days, one delivered recipient each. */
const SEED_EMAILS_SQL = `
  with domain as (select id, domain from domains where org_id = $1 order by domain limit 1)
  insert into transactional_emails (id, org_id, domain_id, domain, from_email, subject, message_id, status, quota_day, created_at, updated_at)
  select lpad(to_hex(g), 24, '0'), $1, domain.id, domain.domain, 'shop@' || domain.domain, 'Your receipt #' || g,
         lpad(to_hex(g), 24, '0') || '@' || domain.domain, 'sent', to_char(now(), 'YYYY-MM-DD'),
         now() - (g::double precision / $2) * interval '120 days', now()
    from generate_series(1, $2::int) as g, domain`;
const SEED_RECIPIENTS_SQL = `
  insert into email_recipients (id, org_id, email_id, email, kind, status, created_at, updated_at)
  select 'r' || lpad(to_hex(g), 23, '0'), $1, lpad(to_hex(g), 24, '0'), 'user' || g || '@example.com', 'to', 'delivered', now(), now()
    from generate_series(1, $2::int) as g`;
/**
 * One completed import that named the first `$2` contacts (the newest contact among them, so its
 * timeline has an import), and a draft broadcast to the VIP segment (its edit page; the sent ones
 * with their events are seedEmailEvents').
 */
const SEED_IMPORT_SQL = `
  insert into contact_imports (id, org_id, status, filename, total_rows, rows_done, created, upload_expires_at, uploaded_at, completed_at, created_at, updated_at)
  values ('1a0000000000000000000001', $1, 'completed', 'customers.csv', $2::int, $2::int, $2::int, now(), now(), now(), now(), now())`;
const SEED_IMPORT_MEMBERS_SQL = `
  insert into contact_import_members (contact_id, import_id, org_id, outcome, created_at)
  select 'c' || lpad(to_hex(g), 23, '0'), '1a0000000000000000000001', $1, 'created', now() from generate_series(1, $2::int) as g`;
const SEED_BROADCASTS_SQL = `
  insert into broadcasts (id, org_id, name, subject, from_name, from_email, segment_ids, html, status, created_at, updated_at)
  select 'bd0000000000000000000001', org_id, 'Spring draft', 'News for {{first_name}}', 'Shop', 'news@' || domain, '{5e0000000000000000000002}',
         '<p>Hello {{first_name}}</p>', 'draft', now(), now()
    from domains where org_id = $1 order by domain limit 1`;

export const benchmark: Benchmark = {
  name: 'dashboard',
  description:
    'First load and p95 of each dashboard page for a workspace with 100,000 emails, 1,000,000 events and 1,000,000 contacts (target: under 300 ms).',

  async setup(context: BenchContext) {
    const emails = context.options.quick ? 10_000 : 100_000;
    const events = context.options.quick ? 100_000 : 1_000_000;
    const contacts = context.options.quick ? 100_000 : 1_000_000;
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const started = performance.now();
    await seedEmailEvents(databaseUrl, workspace.orgId, events);
    await withClient(databaseUrl, async (client) => {
      await client.query(SEED_EMAILS_SQL, [workspace.orgId, emails]);
      await client.query(SEED_RECIPIENTS_SQL, [workspace.orgId, emails]);
      await client.query('vacuum analyze transactional_emails, email_recipients');
    });
    const seeded = await seedContacts(databaseUrl, workspace.orgId, contacts);
    await withClient(databaseUrl, async (client) => {
      await client.query(SEED_IMPORT_SQL, [workspace.orgId, Math.min(contacts, 100_000)]);
      await client.query(SEED_IMPORT_MEMBERS_SQL, [workspace.orgId, Math.min(contacts, 100_000)]);
      await client.query(SEED_BROADCASTS_SQL, [workspace.orgId]);
      await client.query('vacuum analyze contact_imports, contact_import_members, broadcasts');
    });
    context.log(
      `seeded ${emails} emails, ${events} email events and ${contacts} contacts in ${Math.round(performance.now() - started)} ms`,
    );

    const session = await dashboardSession(context, databaseUrl, workspace.orgId);

    const api = await context.start('api', await context.env(databaseUrl));
    const newest = lpadHex(emails);
    const pages = [
      '/dashboard/keys',
      '/dashboard/domains',
      '/dashboard/emails',
      `/dashboard/emails/${newest}`,
      '/dashboard/emails?status=sent',
      '/dashboard/webhooks',
      '/dashboard/inbox',
      '/dashboard/metrics?period=90d',
      '/dashboard/contacts',
      '/dashboard/contacts?q=user12345',
      '/dashboard/contacts?q=grace',
      '/dashboard/contacts?q=nobody-has-this',
      '/dashboard/contacts?tag=vip',
      '/dashboard/contacts?status=unsubscribed&tag=tag1',
      `/dashboard/contacts/${seeded.newestContactId}`,
      '/dashboard/contacts/imports',
      '/dashboard/contacts/imports/1a0000000000000000000001',
      '/dashboard/segments',
      '/dashboard/segments/new',
      ...seeded.segmentIds.map((id) => `/dashboard/segments/${id}`),
      '/dashboard/suppressions',
      '/dashboard/suppressions?reason=complaint',
      '/dashboard/streams',
      '/dashboard/streams/broadcast',
      '/dashboard/broadcasts',
      '/dashboard/broadcasts/new',
      '/dashboard/broadcasts/bd0000000000000000000001/edit',
      '/dashboard/broadcasts/b00000000000000000000001',
      '/dashboard/templates',
      '/dashboard/automations',
      '/dashboard/people',
      '/dashboard/settings',
    ];

    const load = pageLoader(api.url, { session });
    const firstLoad = await firstLoads(pages, load);
    context.note('dashboard: first load of each page (ms)', pages.map((p) => `${p}: ${fmt(firstLoad.get(p)!)}`).join('\n'));

    return {
      async warmup() {
        for (const path of pages) await load(path);
      },
      async run() {
        const timings = await timePages(pages, context.options.durationSec, load);
        const lines = [...timings].map(([path, t]) => `${path} ${fmt(t.p50)} / ${fmt(t.p95)} ms`);
        context.log(`p50 / p95 per page: ${lines.join(', ')}`);
        const slowestP95 = Math.max(...[...timings.values()].map((t) => t.p95));
        return { slowest_first_load_ms: Math.max(...firstLoad.values()), slowest_p95_ms: slowestP95, emails, events, contacts };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return [
      pageTargetSummary(
        'dashboard',
        `slowest page over ${fmt(med(stats, 'emails'))} emails, ${fmt(med(stats, 'events'))} events and ${fmt(med(stats, 'contacts'))} contacts`,
        stats,
      ),
    ];
  },
};

/** An email id as the seed writes it: the number in hex, zero-padded to 24. */
function lpadHex(n: number): string {
  return n.toString(16).padStart(24, '0');
}
