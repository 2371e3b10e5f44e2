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
import { createOrm } from '../db/orm.ts';
import { createDashboardAuthService } from '../src/modules/dashboard/dashboard-auth.service.ts';
import type { BenchContext } from './lib/context.ts';
import { seedContacts } from './lib/seed-contacts.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark } from './lib/types.ts';

const TARGET_MS = 300;

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

    const orm = await createOrm({ databaseUrl, poolMax: 2 });
    context.defer(() => orm.close());
    const auth = createDashboardAuthService({ orm });
    const { token: invitation } = await auth.invite({ orgId: workspace.orgId, email: 'bench@example.com', role: 'owner' });
    const { token: session } = await auth.acceptInvite(invitation, { name: 'Bench', password: 'benchmark password' });
    const api = await context.start('api', await context.env(databaseUrl));

    /** One request; returns its wall time and, for the API, how many contacts the page held. */
    async function load(path: string): Promise<number> {
      const headers: Record<string, string> = path.startsWith('/api/')
        ? { authorization: `Bearer ${workspace.key}` }
        : { cookie: `herald_session=${session}` };
      const begun = performance.now();
      const response = await fetch(`${api.url}${path}`, { headers, redirect: 'manual' });
      await response.text();
      if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
      return performance.now() - begun;
    }

    const firstLoads = new Map<string, number>();
    for (const [, path] of QUERIES) firstLoads.set(path, await load(path));
    context.note(
      'contact-search: first load of each query (ms)',
      QUERIES.map(([label, p]) => `${label} (${p}): ${fmt(firstLoads.get(p)!)}`).join('\n'),
    );

    return {
      async warmup() {
        for (const [, path] of QUERIES) await load(path);
      },
      async run() {
        const perQuery = Math.max(1, context.options.durationSec / QUERIES.length);
        const lines: string[] = [];
        let slowestP95 = 0;
        for (const [label, path] of QUERIES) {
          const samples: number[] = [];
          const until = performance.now() + perQuery * 1000;
          while (performance.now() < until) samples.push(await load(path));
          samples.sort((a, b) => a - b);
          const p95 = quantile(samples, 0.95);
          slowestP95 = Math.max(slowestP95, p95);
          lines.push(
            `${label} (${path}): first ${fmt(firstLoads.get(path)!)}, p50 ${fmt(quantile(samples, 0.5))}, p95 ${fmt(p95)} ms (${samples.length} requests)`,
          );
        }
        context.log(`contact-search per query:\n  ${lines.join('\n  ')}`);
        context.note('contact-search: p50 and p95 of each query', lines.join('\n'));
        return { slowest_first_load_ms: Math.max(...firstLoads.values()), slowest_p95_ms: slowestP95, contacts };
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const first = med(stats, 'slowest_first_load_ms');
    const p95 = med(stats, 'slowest_p95_ms');
    return [
      {
        name: 'contact-search',
        figure: `slowest search over ${fmt(med(stats, 'contacts'))} contacts: first load ${fmt(first)} ms, p95 ${fmt(p95)} ms`,
        ratio: Math.max(first, p95) / TARGET_MS,
        baseline: 'the 300 ms target',
        target: { text: '< 300 ms', met: first < TARGET_MS && p95 < TARGET_MS },
      },
    ];
  },
};
