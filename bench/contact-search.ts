/**
 * Contact search at the size (issue 34): 1,000,000 contacts (bench/lib/seed-contacts.ts;
 * `--contacts=N` for another size, `--quick` 100,000), a real `herald api` process, and the
 * searches a person or a client runs: GET /api/v1/contacts with `search` (a prefix of the email,
 * the full name or the last name, any case), `tag` and `status`, alone and together (two broad
 * filters sharing no contact, and sharing many), and the dashboard's contacts page with the
 * same filters (`q`, a part of the email or name, `tag`, `status`). Each query is run once
 * cold (its first load) and then one request at a time for its share of the run's duration;
 * the figure is the slowest query's p95 against the dashboard's 300 ms target (wall time over
 * loopback).
 */
import type { BenchContext } from './lib/context.ts';
import { seedContacts } from './lib/seed-contacts.ts';
import { dashboardSession, firstLoads, pageLoader, pageTargetSummary, timePages } from './lib/page-loads.ts';
import { fmt, med } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

/** `[label, path]`: API searches (the key's bearer) and dashboard pages (the session's cookie). */
const QUERIES = [
  ['api search, one email (~110 prefix matches)', '/api/v1/contacts?search=user12345'],
  ['api search, first name on 20 %', '/api/v1/contacts?search=grace'],
  ['api search, last name prefix', '/api/v1/contacts?search=Name4242'],
  ['api search, no match', '/api/v1/contacts?search=nobody-has-this'],
  ['api tag on 1 %', '/api/v1/contacts?tag=vip'],
  ['api tag on 5 %', '/api/v1/contacts?tag=tag3'],
  ['api tag no one has', '/api/v1/contacts?tag=no-such-tag'],
  ['api search and tag', '/api/v1/contacts?search=grace&tag=vip'],
  ['api search, one email, and tag', '/api/v1/contacts?search=user12345&tag=tag5'],
  ['api search and status', '/api/v1/contacts?search=alan&status=unsubscribed'],
  ['api search and status, 10,000 have both', '/api/v1/contacts?search=grace&status=unsubscribed'],
  ['api status on 1 %', '/api/v1/contacts?status=unsubscribed'],
  ['dashboard q, one email', '/dashboard/contacts?q=user12345'],
  ['dashboard q, first name', '/dashboard/contacts?q=grace'],
  ['dashboard tag on 1 %', '/dashboard/contacts?tag=vip'],
  ['dashboard q and tag', '/dashboard/contacts?q=grace&tag=vip'],
  ['dashboard q and tag, 10,000 have both', '/dashboard/contacts?q=ada&tag=vip'],
  ['dashboard q and status', '/dashboard/contacts?q=alan&status=unsubscribed'],
  ['dashboard q no match', '/dashboard/contacts?q=nobody-has-this'],
] as const;

export const benchmark: Benchmark = {
  name: 'contact-search',
  description:
    'First load, p50 and p95 of contact searches (prefix `search`, `tag`, `status`, two together) through GET /api/v1/contacts and the dashboard over 1,000,000 contacts (target: under 300 ms).',

  async setup(context: BenchContext) {
    const contacts = context.options.sizes.contacts ?? (context.options.quick ? 100_000 : 1_000_000);
    const databaseUrl = await context.database();
    const workspace = await context.workspace(databaseUrl);
    const started = performance.now();
    await seedContacts(databaseUrl, workspace.orgId, contacts);
    context.log(`seeded ${contacts} contacts in ${Math.round(performance.now() - started)} ms`);

    const session = await dashboardSession(context, databaseUrl, workspace.orgId);
    const api = await context.start('api', await context.env(databaseUrl));
    const load = pageLoader(api.url, { session, key: workspace.key });
    const paths = QUERIES.map(([, path]) => path);

    const firstLoad = await firstLoads(paths, load);
    context.note(
      'contact-search: first load of each query (ms)',
      QUERIES.map(([label, p]) => `${label} (${p}): ${fmt(firstLoad.get(p)!)}`).join('\n'),
    );

    return {
      async warmup() {
        for (const path of paths) await load(path);
      },
      async run() {
        const timings = await timePages(paths, context.options.durationSec, load);
        const lines = QUERIES.map(([label, path]) => {
          const { p50, p95, requests } = timings.get(path)!;
          return `${label} (${path}): first ${fmt(firstLoad.get(path)!)}, p50 ${fmt(p50)}, p95 ${fmt(p95)} ms (${requests} requests)`;
        });
        const slowestP95 = Math.max(...[...timings.values()].map((t) => t.p95));
        context.log(`contact-search per query:\n  ${lines.join('\n  ')}`);
        context.note('contact-search: p50 and p95 of each query', lines.join('\n'));
        return { slowest_first_load_ms: Math.max(...firstLoad.values()), slowest_p95_ms: slowestP95, contacts };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    return [pageTargetSummary('contact-search', `slowest search over ${fmt(med(stats, 'contacts'))} contacts`, stats)];
  },
};
