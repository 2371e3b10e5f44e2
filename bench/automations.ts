/**
 * 12. Automations: enrolment at scale, steps per second, waits ending on time, and a worker
 * killed three times under load, through real Herald processes (one `herald all`, as `npm start`
 * runs Herald, with the workflow bundle prebuilt as `npm start` prebuilds it; `herald api` and
 * `herald worker` apart for the crash part, so the worker alone can be killed), a Temporal dev
 * server of its own and a counting relay (bench/lib/counting-relay.ts) in this process.
 *
 * Each run, with fresh automations, segments and contacts:
 * 1. Enrolment: `--contacts` (default 100,000; `--quick` 10,000) new contacts imported into a
 *    static segment through the real CSV import API (POST /contacts/imports, PUT of the file to
 *    its upload URL), as a user does; an active automation triggered by `segment.joined` on
 *    that segment sends a welcome email as its first and only step. Timed from the import
 *    request to the last welcome at the relay, with when the import ended (every run enrolled)
 *    and when the last email row was written. Baseline: a broadcast to that same segment (the
 *    same contacts, the same template size), from its first request to its last message at the
 *    relay. Herald's peak RSS during both, and the open Temporal workflows before the import
 *    and after the last welcome (one actor per automation, none per run).
 * 2. Steps: `--step-runs` (default 20,000) runs of condition → update_contact (tag) → wait 1s →
 *    condition → exit, enrolled while the automation is paused and released at once by PATCH
 *    /automations/{id} (status active): timeline rows and runs completed per second from the
 *    PATCH to the last run's end. Baseline: the same state changes as raw SQL from this process
 *    (claim, contact tags, timeline rows, run rows, completion events and counters), batches of
 *    500 on one connection, as the drain batches them, on a second set of runs for the same
 *    contacts. Then `--waiting-runs` (default 100,000) runs enrolled at once, each waiting 10,
 *    15, 20, 25 or 30 s (by a condition on a custom field): how late each wait ends, the
 *    timeline's `waited` row's created_at (its batch's transaction start) minus the wait's
 *    `until`, p50/p99/max, over all waits and over those due after every run was parked.
 * 3. Crash: `--crash-runs` (default 10,000) contacts imported into a segment whose automation
 *    goes send → wait 5s → send; the worker is killed with SIGKILL three times (when a quarter
 *    of the first emails are written, a quarter of the second ones, and half of all emails are
 *    at the relay) and started again each time. Then: runs completed, automation step duplicates
 *    (two email rows for one run and step: must be 0), contacts with exactly 2 distinct emails
 *    at the relay, and relay re-deliveries of one email row (the same Message-ID twice: the
 *    sending-domain actor is at-least-once for messages the relay accepted whose answer was not
 *    recorded before the kill).
 */
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../src/temporal/client.ts';
import pg from 'pg';
import { newId } from '../db/ids.ts';
import { scopeToOrg } from '../db/orm.ts';
import { HeraldKind } from '../workflows/search-attributes.ts';
import { enrolContacts } from '../src/modules/automations/automation-runs.repo.ts';
import { createAutomationsAdmin } from '../src/modules/automations/automations.admin.ts';
import type { BenchContext, HeraldProcess } from './lib/context.ts';
import { startCountingRelay } from './lib/counting-relay.ts';
import { peakRss } from './lib/proc.ts';
import { seedContacts } from './lib/seed.ts';
import { sendingWorkspace } from './lib/sending.ts';
import { fmt, med, quantile } from './lib/stats.ts';
import type { Benchmark, Figures } from './lib/types.ts';

const POOL = 5;
const BATCH = 500;
const WAITS_S = [10, 15, 20, 25, 30];
const HTML = '<html><body><h1>Hello {{first_name}} {{last_name}}</h1><p>Welcome aboard. News of the week from Bench.</p></body></html>';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(
  what: string | (() => string),
  done: () => Promise<boolean> | boolean,
  timeoutMs: number,
  intervalMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${typeof what === 'string' ? what : what()}`);
    }
    await sleep(intervalMs);
  }
}

/** A CSV of `count` new contacts `<prefix><k>@example.com`. */
function csvOf(prefix: string, count: number): string {
  const lines = ['email,first_name,last_name'];
  for (let k = 1; k <= count; k += 1) lines.push(`${prefix}${k}@example.com,First${k},Last${k}`);
  return `${lines.join('\n')}\n`;
}

export const benchmark: Benchmark = {
  name: 'automations',
  description:
    'Automations through real Herald processes: a CSV import of N contacts into a static segment whose automation sends a welcome (import request → last welcome at the relay) against a broadcast to the same contacts; non-send steps per second against the same state changes as raw SQL; how late waits end with many runs waiting; kill -9 of the worker three times under send → wait → send.',
  needsTemporal: 'own',

  async setup(context: BenchContext) {
    const quick = context.options.quick;
    const sizes = {
      contacts: context.options.sizes.contacts ?? (quick ? 10_000 : 100_000),
      stepRuns: context.options.sizes.stepRuns ?? (quick ? 2_000 : 20_000),
      waitingRuns: context.options.sizes.waitingRuns ?? (quick ? 10_000 : 100_000),
      crashRuns: context.options.sizes.crashRuns ?? (quick ? 1_000 : 10_000),
    };
    context.log(
      `contacts ${sizes.contacts}, step runs ${sizes.stepRuns}, waiting runs ${sizes.waitingRuns}, crash runs ${sizes.crashRuns}`,
    );
    const { databaseUrl, workspace, domain, orm } = await sendingWorkspace(context);
    const orgId = workspace.orgId;
    const relay = await startCountingRelay();
    context.defer(() => relay.close());
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    pool.on('error', () => {});
    context.defer(() => pool.end());
    const query = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<T>(text, values)).rows;

    // The seeded contacts the step and wait parts enrol (custom field seats = i % 50 picks the wait).
    const seeded = Math.max(sizes.stepRuns, sizes.waitingRuns);
    await seedContacts(databaseUrl, orgId, seeded);
    const seededIds = (
      await query<{ id: string }>(
        `select id from contacts where org_id = $1 and email like 'contact%@example.com' order by created_at desc limit $2`,
        [orgId, seeded],
      )
    ).map((row) => row.id);

    const env = await context.env(databaseUrl, {
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      SMTP_RELAY_POOL_SIZE: String(POOL),
      BLOB_DIR: join(context.scratch, 'blobs'),
    });
    const temporal = await context.temporal();
    const connection = await connectTemporal({ address: temporal.address, tls: null });
    context.defer(() => connection.close());
    const temporalClient = new Client({ connection, namespace: temporal.namespace });

    /** Running workflows of the namespace, by HeraldKind. */
    async function openWorkflows(): Promise<{ total: number; byKind: Record<string, number> }> {
      const byKind: Record<string, number> = {};
      let total = 0;
      for await (const info of temporalClient.workflow.list({ query: 'ExecutionStatus="Running"' })) {
        const kind = info.typedSearchAttributes.get(HeraldKind) ?? info.type;
        byKind[kind] = (byKind[kind] ?? 0) + 1;
        total += 1;
      }
      return { total, byKind };
    }
    const kinds = (open: { byKind: Record<string, number> }) =>
      Object.entries(open.byKind)
        .sort()
        .map(([kind, count]) => `${kind} ${count}`)
        .join(', ') || 'none';

    // Herald: one `herald all` process, or api + worker apart (the crash part kills the worker alone).
    let all: HeraldProcess | null = null;
    let api: HeraldProcess | null = null;
    let worker: HeraldProcess | null = null;
    const apiUrl = () => (all ?? api)!.url;
    async function oneProcess(): Promise<HeraldProcess> {
      await api?.stop();
      await worker?.stop();
      api = worker = null;
      all ??= await context.start('all', env, { profile: true });
      return all;
    }
    async function split(): Promise<void> {
      await all?.stop();
      all = null;
      worker ??= await context.start('worker', env, { profile: true });
      api ??= await context.start('api', env);
    }

    const headers = { Authorization: `Bearer ${workspace.key}`, 'Content-Type': 'application/json' };
    async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
      const response = await fetch(`${apiUrl()}${path}`, {
        method,
        headers: { ...headers, 'Idempotency-Key': `bench-${newId()}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await response.json()) as { data?: Record<string, unknown> };
      if (response.status >= 300 || !json.data) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
      return json.data;
    }

    /** Imports `csv` into the segment as a user does: the import, then the file PUT to its upload URL. */
    async function importCsv(segmentId: string, csv: string): Promise<string> {
      const created = await call('POST', '/api/v1/contacts/imports', { segment_id: segmentId, filename: 'bench.csv' });
      const upload = new URL(String(created.upload_url));
      const response = await fetch(`${apiUrl()}${upload.pathname}${upload.search}`, {
        method: 'PUT',
        headers: { 'Content-Type': 'text/csv' },
        body: csv,
      });
      if (response.status !== 202) throw new Error(`the upload answered ${response.status}: ${await response.text()}`);
      return String(created._id);
    }

    async function template(name: string, subject: string): Promise<string> {
      const created = await call('POST', '/api/v1/templates', { name, subject, html: HTML });
      await call('PATCH', `/api/v1/templates/${String(created._id)}`, { status: 'published' });
      return String(created._id);
    }

    /** Arrivals at the relay for addresses starting with `prefix`, counted as the list grows (until the next clear). */
    function relayWatch(prefix: string) {
      let seen = 0;
      let count = 0;
      let last = 0;
      return {
        count() {
          const arrivals = relay.arrivals();
          for (; seen < arrivals.length; seen += 1) {
            const message = arrivals[seen]!;
            if (!message.rcptTo[0]?.startsWith(prefix)) continue;
            count += 1;
            last = Math.max(last, message.receivedAt);
          }
          return count;
        },
        last: () => last,
      };
    }

    const admin = createAutomationsAdmin({ orm });
    const createAutomation = async (name: string, definition: unknown, status = 'active') =>
      (await admin.createAutomation({ orgId, name, definition, status })).id;

    /**
     * Enrols contacts as a trigger does (enrolContacts, one transaction) while the automation is
     * active, and pauses it in the same transaction: the runs wait, all due, until PATCH
     * /automations/{id} makes it active again and wakes its actor.
     */
    async function enrolPaused(automationId: string, key: string, contactIds: readonly string[]): Promise<void> {
      await scopeToOrg(orm.em.fork(), orgId).transactional(async (em) => {
        const touched = await enrolContacts(em, { orgId, type: 'event', key, contactIds });
        if (touched.length !== 1) throw new Error(`enrolment touched ${touched.length} automations, not 1`);
        await em.execute(`update automations set status = 'paused' where id = ? and org_id = ?`, [automationId, orgId]);
      });
    }

    /**
     * Statistics for the tables the benchmark reads its figures from: this machine's PostgreSQL
     * may run with autovacuum off, and without statistics the join of 100,000 email rows to their
     * runs was planned as a nested loop that ran for more than 15 minutes.
     */
    const analyze = () => query('analyze automation_runs, automation_run_steps, transactional_emails');

    const openRuns = async (automationId: string) =>
      (
        await query<{ open: number }>(`select count(*)::int as open from automation_runs where automation_id = $1 and status = 'active'`, [
          automationId,
        ])
      )[0]!.open;

    await oneProcess();
    const welcomeId = await template('Welcome', 'Welcome, {{first_name}}');
    const secondId = await template('Second', 'Still there, {{first_name}}?');
    const from = `hello@${domain}`;

    /** Part 1: the import into an automation's segment, then a broadcast to the same contacts. */
    async function enrolment(label: string, count: number, herald: HeraldProcess): Promise<Figures> {
      relay.clear();
      const segment = await call('POST', '/api/v1/segments', { name: `Imported ${label}`, type: 'static' });
      const segmentId = String(segment._id);
      const automationId = await createAutomation(`Welcome ${label}`, {
        trigger: { type: 'segment.joined', segment_id: segmentId },
        start: 'welcome',
        steps: [{ id: 'welcome', type: 'send_email', template_id: welcomeId, from, from_name: 'Bench' }],
      });
      const prefix = `auto-${label}-`;
      const csv = csvOf(prefix, count);
      const before = await openWorkflows();
      const welcomes = relayWatch(prefix);
      const started = Date.now();
      let importId = '';
      const imported = (async () => {
        importId = await importCsv(segmentId, csv);
        await waitUntil(
          () => `${count} welcomes at the relay (${welcomes.count()} so far)`,
          () => welcomes.count() >= count,
          Math.max(1_800_000, count * 20),
          200,
        );
      })();
      const rss = await peakRss({ herald: herald.pid }, imported);
      await imported;
      const after = await openWorkflows();
      const importRow = await call('GET', `/api/v1/contacts/imports/${importId}`);
      const welcomesArrived = welcomes.count();
      const importSeconds = (welcomes.last() - started) / 1000;

      relay.clear();
      const news = relayWatch(prefix);
      const broadcastStarted = Date.now();
      const broadcastDone = (async () => {
        const draft = await call('POST', '/api/v1/outbox/broadcasts', {
          name: `Bench ${label}`,
          subject: 'News for {{first_name}}',
          from_name: 'Bench',
          from_email: `news@${domain}`,
          segment_ids: [segmentId],
          html: HTML,
        });
        await call('POST', `/api/v1/outbox/broadcasts/${String(draft._id)}/send`, {});
        await waitUntil(
          () => `${count} broadcast messages at the relay (${news.count()} so far)`,
          () => news.count() >= count,
          Math.max(1_800_000, count * 20),
          200,
        );
      })();
      const broadcastRss = await peakRss({ herald: herald.pid }, broadcastDone);
      await broadcastDone;
      await call('DELETE', `/api/v1/automations/${automationId}`);
      const broadcastSeconds = (news.last() - broadcastStarted) / 1000;
      // Read once both sends are done, so the statistics this gathers (autovacuum may be off) change neither.
      await analyze();
      const [written] = await query<{ emails: number; last_ms: number }>(
        `select count(*)::int as emails, extract(epoch from max(e.created_at))::float8 * 1000 as last_ms
           from transactional_emails e join automation_runs r on r.id = e.automation_run_id and r.org_id = e.org_id
          where r.automation_id = $1 and r.org_id = $2`,
        [automationId, orgId],
      );
      const runs = await query<{ status: string; n: number }>(
        `select status, count(*)::int as n from automation_runs where automation_id = $1 group by status`,
        [automationId],
      );
      context.note(
        `enrolment ${label}: ${count} contacts imported`,
        [
          `import ${String(importRow.status)}: created ${String(importRow.created)}, added to the segment ${String(importRow.added_to_segment)}, completed ${fmt((Date.parse(String(importRow.completed_at)) - started) / 1000)} s after the request`,
          `runs: ${runs.map((r) => `${r.status} ${r.n}`).join(', ')}`,
          `email rows: ${written!.emails}, the last written ${fmt((written!.last_ms - started) / 1000)} s after the request`,
          `open workflows before the import: ${before.total} (${kinds(before)}); after the last welcome: ${after.total} (${kinds(after)})`,
        ].join('\n'),
      );

      return {
        contacts: count,
        welcomes_arrived: welcomesArrived,
        import_to_last_welcome_s: importSeconds,
        import_completed_s: (Date.parse(String(importRow.completed_at)) - started) / 1000,
        last_email_row_s: (written!.last_ms - started) / 1000,
        broadcast_arrived: news.count(),
        broadcast_to_last_s: broadcastSeconds,
        ratio_to_broadcast: importSeconds / broadcastSeconds,
        rss_import_mb: rss.herald!,
        rss_broadcast_mb: broadcastRss.herald!,
        workflows_before: before.total,
        workflows_after: after.total,
        automation_workflows_before: before.byKind.automation ?? 0,
        automation_workflows_after: after.byKind.automation ?? 0,
      };
    }

    /** Part 2a: non-send steps per second; the raw SQL baseline after. */
    async function steps(label: string, count: number): Promise<Figures> {
      const tag = `stepped-${label}`;
      const definition = (event: string) => ({
        trigger: { type: 'event', name: event },
        start: 'c1',
        steps: [
          { id: 'c1', type: 'condition', if: { field: 'custom.plan', op: 'eq', value: 'pro' }, yes: 'tag', no: 'tag' },
          { id: 'tag', type: 'update_contact', add_tags: [tag], next: 'pause' },
          { id: 'pause', type: 'wait', duration: '1s', next: 'c2' },
          { id: 'c2', type: 'condition', if: { has_tag: tag }, yes: 'done', no: 'done' },
          { id: 'done', type: 'exit', reason: 'bench' },
        ],
      });
      const contactIds = seededIds.slice(0, count);
      const event = `bench.steps.${label}`;
      const automationId = await createAutomation(`Steps ${label}`, definition(event));
      await enrolPaused(automationId, event, contactIds);
      await analyze();
      const started = Date.now();
      await call('PATCH', `/api/v1/automations/${automationId}`, { status: 'active' });
      await waitUntil(`${count} step runs to end`, async () => (await openRuns(automationId)) === 0, 1_800_000, 250);
      const [done] = await query<{ rows: number; waited: number; last_ms: number; parked_ms: number; late_p99_ms: number }>(
        `select count(*)::int as rows, count(*) filter (where s.outcome = 'waited')::int as waited,
                extract(epoch from max(s.created_at))::float8 * 1000 as last_ms,
                extract(epoch from max(s.created_at) filter (where s.outcome = 'waiting'))::float8 * 1000 as parked_ms,
                percentile_disc(0.99) within group (order by extract(epoch from s.created_at - (s.detail->>'until')::timestamptz) * 1000)
                  filter (where s.outcome = 'waited') as late_p99_ms
           from automation_run_steps s join automation_runs r on r.id = s.run_id
          where r.automation_id = $1`,
        [automationId],
      );
      const [ended] = await query<{ completed: number; last_ms: number }>(
        `select count(*) filter (where status = 'completed')::int as completed, extract(epoch from max(ended_at))::float8 * 1000 as last_ms
           from automation_runs where automation_id = $1`,
        [automationId],
      );
      const seconds = (Math.max(done!.last_ms, ended!.last_ms) - started) / 1000;
      const baseline = await rawSqlSteps(label, definition(`bench.baseline.${label}`), contactIds);
      return {
        step_runs: count,
        step_runs_completed: ended!.completed,
        step_timeline_rows: done!.rows,
        step_seconds: seconds,
        steps_per_s: done!.rows / seconds,
        step_runs_per_s: ended!.completed / seconds,
        step_first_pass_s: (done!.parked_ms - started) / 1000,
        step_wait_late_p99_ms: Number(done!.late_p99_ms),
        baseline_seconds: baseline.seconds,
        baseline_rows_per_s: baseline.rows / baseline.seconds,
        ratio_steps_to_raw_sql: done!.rows / seconds / (baseline.rows / baseline.seconds),
      };
    }

    /**
     * The bare cost of part 2a's state changes: runs of a draft automation (nothing else drains
     * them) inserted for the same contacts, then advanced by raw SQL in batches of 500 on one
     * connection, each batch one transaction as the drain's: the claim (the drain's statement),
     * the contacts' tags, the timeline rows, the runs, and for ended runs their events and the
     * counters. No trigger lookups, no definition, no engine.
     */
    async function rawSqlSteps(label: string, definition: unknown, contactIds: readonly string[]) {
      const automationId = await createAutomation(`Baseline ${label}`, definition, 'draft');
      const [automation] = await query<{ definition_id: string }>(`select definition_id from automations where id = $1`, [automationId]);
      const tag = `baseline-${label}`;
      await query(
        `insert into automation_runs (id, org_id, automation_id, definition_id, contact_id, status, step_id, due_at, context, created_at, updated_at)
         select substr(md5(random()::text || c.id), 1, 24), $1::text, $2::text, $3::text, c.id, 'active', 'c1', now(),
                '{"trigger":{"type":"event","properties":{}}}', now(), now()
           from contacts c where c.org_id = $1::text and c.id = any($4::text[])`,
        [orgId, automationId, automation!.definition_id, contactIds],
      );
      await analyze();
      const client = await pool.connect();
      let rows = 0;
      const started = performance.now();
      try {
        for (;;) {
          await client.query('begin');
          const claimed = (
            await client.query<{
              id: string;
              step_id: string;
              context: Record<string, unknown>;
              created_at: Date;
              contact_id: string;
              tags: string[];
              custom_fields: Record<string, unknown>;
            }>(
              `select r.id, r.step_id, r.context, r.created_at, c.id as contact_id, c.email, c.tags, c.custom_fields,
                      exists (select 1 from suppressions x where x.org_id = r.org_id and x.email = c.email) as suppressed
                 from automation_runs r left join contacts c on c.id = r.contact_id and c.org_id = r.org_id
                where r.automation_id = $1 and r.org_id = $2 and r.status = 'active' and r.due_at <= now()
                order by r.due_at limit $3 for update of r skip locked`,
              [automationId, orgId, BATCH],
            )
          ).rows;
          if (claimed.length === 0) {
            await client.query('commit');
            const [left] = (
              await client.query<{ open: number }>(
                `select count(*)::int as open from automation_runs where automation_id = $1 and status = 'active'`,
                [automationId],
              )
            ).rows;
            if (left!.open === 0) break;
            await sleep(20);
            continue;
          }
          const timeline: Record<string, unknown>[] = [];
          const runs: Record<string, unknown>[] = [];
          const contacts: { id: string; tags: string[] }[] = [];
          const events: Record<string, unknown>[] = [];
          const at = new Date();
          for (const run of claimed) {
            if (run.step_id === 'c1') {
              const until = new Date(at.getTime() + 1000).toISOString();
              const branch = run.custom_fields.plan === 'pro' ? 'yes' : 'no';
              timeline.push(
                { id: newId(), runId: run.id, stepId: 'c1', kind: 'condition', outcome: 'branched', detail: { branch } },
                {
                  id: newId(),
                  runId: run.id,
                  stepId: 'tag',
                  kind: 'update_contact',
                  outcome: 'updated',
                  detail: { add_tags: [tag], remove_tags: [], set_fields: {} },
                },
                { id: newId(), runId: run.id, stepId: 'pause', kind: 'wait', outcome: 'waiting', detail: { until } },
              );
              contacts.push({ id: run.contact_id, tags: [...new Set([...run.tags, tag])] });
              runs.push({
                id: run.id,
                status: 'active',
                stepId: 'pause',
                dueAt: until,
                waitingFor: null,
                context: { ...run.context, wait: { step: 'pause', until } },
                exitReason: null,
                error: null,
              });
            } else {
              const { wait, ...context } = run.context as { wait?: { until: string } };
              timeline.push(
                { id: newId(), runId: run.id, stepId: 'pause', kind: 'wait', outcome: 'waited', detail: { until: wait?.until } },
                { id: newId(), runId: run.id, stepId: 'c2', kind: 'condition', outcome: 'branched', detail: { branch: 'yes' } },
                { id: newId(), runId: run.id, stepId: 'done', kind: 'exit', outcome: 'completed', detail: { reason: 'bench' } },
              );
              runs.push({
                id: run.id,
                status: 'completed',
                stepId: 'done',
                dueAt: null,
                waitingFor: null,
                context,
                exitReason: 'bench',
                error: null,
              });
              events.push({
                id: newId(),
                type: 'automation.run.completed',
                data: {
                  run: {
                    _id: run.id,
                    automation_id: automationId,
                    contact_id: run.contact_id,
                    status: 'completed',
                    step_id: 'done',
                    due_at: null,
                    waiting_for: null,
                    definition_version: 1,
                    exit_reason: 'bench',
                    error: null,
                    created_at: run.created_at.toISOString(),
                    updated_at: at.toISOString(),
                    ended_at: at.toISOString(),
                  },
                  automation: { _id: automationId, name: `Baseline ${label}` },
                },
              });
            }
          }
          if (contacts.length > 0) {
            await client.query(
              `update contacts c set tags = array(select jsonb_array_elements_text(u.tags)), updated_at = now()
                 from jsonb_to_recordset($1::jsonb) as u(id text, tags jsonb) where c.id = u.id and c.org_id = $2`,
              [JSON.stringify(contacts), orgId],
            );
          }
          await client.query(
            `insert into automation_run_steps (id, org_id, run_id, step_id, kind, outcome, detail, created_at)
             select t.id, $1, t."runId", t."stepId", t.kind, t.outcome, t.detail, now()
               from jsonb_to_recordset($2::jsonb) as t(id text, "runId" text, "stepId" text, kind text, outcome text, detail jsonb)`,
            [orgId, JSON.stringify(timeline)],
          );
          await client.query(
            `update automation_runs r
                set status = u.status, step_id = u."stepId", due_at = u."dueAt", waiting_for = u."waitingFor", context = u.context,
                    exit_reason = u."exitReason", error = left(u.error, 1000), lease_until = null, updated_at = now(),
                    ended_at = case when u.status = 'active' then null else now() end
               from jsonb_to_recordset($1::jsonb) as u(id text, status text, "stepId" text, "dueAt" timestamptz, "waitingFor" text,
                                                      context jsonb, "exitReason" text, error text)
              where r.id = u.id and r.org_id = $2`,
            [JSON.stringify(runs), orgId],
          );
          if (events.length > 0) {
            await client.query(
              `insert into events (id, org_id, type, api_version, data, created_at)
               select e.id, $1, e.type, '1.0.0', e.data, now() from jsonb_to_recordset($2::jsonb) as e(id text, type text, data jsonb)`,
              [orgId, JSON.stringify(events)],
            );
            await client.query(
              `insert into automation_stat_shards (automation_id, shard, org_id, total_runs, active_runs, completed_runs, failed_runs, emails_sent, credits_used)
               values ($1, $2, $3, 0, $4, $5, 0, 0, 0)
               on conflict (automation_id, shard) do update set active_runs = automation_stat_shards.active_runs + excluded.active_runs,
                 completed_runs = automation_stat_shards.completed_runs + excluded.completed_runs`,
              [automationId, Math.floor(Math.random() * 8), orgId, -events.length, events.length],
            );
          }
          await client.query('commit');
          rows += timeline.length;
        }
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
      return { rows, seconds: (performance.now() - started) / 1000 };
    }

    /** Part 2b: many runs waiting 10–30 s; how late each wait ends. */
    async function waits(label: string, count: number): Promise<Figures> {
      const branch = (index: number) => (index < WAITS_S.length - 1 ? `p${index}` : `w${WAITS_S[index]}`);
      const event = `bench.waits.${label}`;
      const automationId = await createAutomation(`Waits ${label}`, {
        trigger: { type: 'event', name: event },
        start: 'p0',
        steps: [
          // seats = i % 50: a fifth of the contacts each wait 10, 15, 20, 25 or 30 s.
          ...WAITS_S.slice(0, -1).map((seconds, i) => ({
            id: `p${i}`,
            type: 'condition',
            if: { field: 'custom.seats', op: 'lt', value: (i + 1) * 10 },
            yes: `w${seconds}`,
            no: branch(i + 1),
          })),
          ...WAITS_S.map((seconds) => ({ id: `w${seconds}`, type: 'wait', duration: `${seconds}s`, next: 'done' })),
          { id: 'done', type: 'exit', reason: 'bench' },
        ],
      });
      await enrolPaused(automationId, event, seededIds.slice(0, count));
      await analyze();
      const started = Date.now();
      await call('PATCH', `/api/v1/automations/${automationId}`, { status: 'active' });
      await waitUntil(`${count} waiting runs to end`, async () => (await openRuns(automationId)) === 0, 1_800_000, 500);
      const [parked] = await query<{ last_ms: number; first_until_ms: number }>(
        `select extract(epoch from max(s.created_at))::float8 * 1000 as last_ms,
                extract(epoch from min((s.detail->>'until')::timestamptz))::float8 * 1000 as first_until_ms
           from automation_run_steps s join automation_runs r on r.id = s.run_id
          where r.automation_id = $1 and s.outcome = 'waiting'`,
        [automationId],
      );
      const late = await query<{ late_ms: number; until_ms: number }>(
        `select extract(epoch from s.created_at - (s.detail->>'until')::timestamptz)::float8 * 1000 as late_ms,
                extract(epoch from (s.detail->>'until')::timestamptz)::float8 * 1000 as until_ms
           from automation_run_steps s join automation_runs r on r.id = s.run_id
          where r.automation_id = $1 and s.outcome = 'waited'`,
        [automationId],
      );
      const all = late.map((row) => row.late_ms).sort((a, b) => a - b);
      const afterParking = late
        .filter((row) => row.until_ms > parked!.last_ms)
        .map((row) => row.late_ms)
        .sort((a, b) => a - b);
      const [ended] = await query<{ completed: number; last_ms: number }>(
        `select count(*) filter (where status = 'completed')::int as completed, extract(epoch from max(ended_at))::float8 * 1000 as last_ms
           from automation_runs where automation_id = $1`,
        [automationId],
      );
      context.note(
        `waits ${label}: lateness per second of due time (ms, p50 / p99 / max, waits)`,
        lateByDueSecond(late, parked!.first_until_ms),
      );
      return {
        waiting_runs: count,
        waiting_runs_completed: ended!.completed,
        parked_s: (parked!.last_ms - started) / 1000,
        waits_s: (ended!.last_ms - started) / 1000,
        wait_late_p50_ms: quantile(all, 0.5),
        wait_late_p99_ms: quantile(all, 0.99),
        wait_late_max_ms: all.at(-1) ?? Number.NaN,
        waits_after_parking: afterParking.length,
        wait_late_after_parking_p50_ms: quantile(afterParking, 0.5),
        wait_late_after_parking_p99_ms: quantile(afterParking, 0.99),
      };
    }

    /** Part 3: the worker killed three times while runs go send → wait 5s → send. */
    async function crash(label: string, count: number): Promise<Figures> {
      await split();
      relay.clear();
      const segment = await call('POST', '/api/v1/segments', { name: `Crash ${label}`, type: 'static' });
      const segmentId = String(segment._id);
      const automationId = await createAutomation(`Crash ${label}`, {
        trigger: { type: 'segment.joined', segment_id: segmentId },
        start: 's1',
        steps: [
          { id: 's1', type: 'send_email', template_id: welcomeId, from, next: 'w' },
          { id: 'w', type: 'wait', duration: '5s', next: 's2' },
          { id: 's2', type: 'send_email', template_id: secondId, from },
        ],
      });
      const prefix = `crash-${label}-`;
      const arrivals = relayWatch(prefix);
      const emailRows = async (step: string) =>
        (
          await query<{ n: number }>(
            `select count(*)::int as n from transactional_emails e join automation_runs r on r.id = e.automation_run_id and r.org_id = e.org_id
              where r.automation_id = $1 and e.automation_step_id = $2`,
            [automationId, step],
          )
        )[0]!.n;
      const kills: string[] = [];
      const plan: [string, () => Promise<boolean> | boolean][] = [
        // The automation's drain mid-batch at each send step, then the sending domain's drain mid-flight.
        ['a quarter of the first emails written', async () => (await emailRows('s1')) >= count / 4],
        ['a quarter of the second emails written', async () => (await emailRows('s2')) >= count / 4],
        ['half of all emails at the relay', () => arrivals.count() >= count],
      ];
      await analyze();
      const started = Date.now();
      await importCsv(segmentId, csvOf(prefix, count));
      for (const [when, reached] of plan) {
        await waitUntil(when, reached, 1_800_000, 50);
        process.kill(worker!.pid, 'SIGKILL');
        const killedAt = Date.now();
        const progress = `s1 rows ${await emailRows('s1')}, s2 rows ${await emailRows('s2')}, at the relay ${arrivals.count()}`;
        worker = null;
        worker = await context.start('worker', env, { profile: true });
        kills.push(
          `${fmt((killedAt - started) / 1000)} s, ${when} (${progress}); a new worker ready ${fmt((Date.now() - killedAt) / 1000)} s later`,
        );
      }
      const settled = async () => {
        const [open] = await query<{ runs: number; emails: number }>(
          `select (select count(*) from automation_runs where automation_id = $1 and status = 'active')::int as runs,
                  (select count(*) from transactional_emails e join automation_runs r on r.id = e.automation_run_id and r.org_id = e.org_id
                    where r.automation_id = $1 and e.status in ('scheduled', 'queued', 'sending'))::int as emails`,
          [automationId],
        );
        return open!.runs === 0 && open!.emails === 0 && arrivals.count() >= 2 * count;
      };
      await waitUntil('every crash run to end and its emails to be sent', settled, 1_800_000, 500);
      const seconds = (arrivals.last() - started) / 1000;
      await sleep(2_000);
      arrivals.count();
      await analyze();

      const runs = await query<{ status: string; n: number }>(
        `select status, count(*)::int as n from automation_runs where automation_id = $1 group by status`,
        [automationId],
      );
      const rows = await query<{ id: string; message_id: string; run_id: string; step_id: string; contact_id: string; status: string }>(
        `select e.id, e.message_id, e.automation_run_id as run_id, e.automation_step_id as step_id, e.contact_id, e.status
           from transactional_emails e join automation_runs r on r.id = e.automation_run_id and r.org_id = e.org_id
          where r.automation_id = $1`,
        [automationId],
      );
      const stepKeys = new Map<string, number>();
      for (const row of rows) stepKeys.set(`${row.run_id}/${row.step_id}`, (stepKeys.get(`${row.run_id}/${row.step_id}`) ?? 0) + 1);
      const stepDuplicates = [...stepKeys.values()].filter((n) => n > 1).length;
      const byMessageId = new Map(rows.map((row) => [row.message_id, row]));
      const seen = new Map<string, number>();
      let unmatched = 0;
      for (const message of relay.arrivals()) {
        if (!message.rcptTo[0]?.startsWith(prefix)) continue;
        if (!message.messageId || !byMessageId.has(message.messageId)) {
          unmatched += 1;
          continue;
        }
        seen.set(message.messageId, (seen.get(message.messageId) ?? 0) + 1);
      }
      const perContact = new Map<string, Set<string>>();
      const perContactStep = new Map<string, number>();
      for (const messageId of seen.keys()) {
        const row = byMessageId.get(messageId)!;
        const set = perContact.get(row.contact_id) ?? new Set<string>();
        set.add(messageId);
        perContact.set(row.contact_id, set);
        const key = `${row.contact_id}/${row.step_id}`;
        perContactStep.set(key, (perContactStep.get(key) ?? 0) + 1);
      }
      const exactlyTwo = [...perContact.values()].filter((set) => set.size === 2).length;
      const redelivered = [...seen.values()].filter((n) => n > 1);
      context.note(
        `crash ${label}: ${count} runs, send → wait 5s → send, the worker killed three times`,
        [
          ...kills.map((kill, i) => `kill ${i + 1}: ${kill}`),
          `runs: ${runs.map((r) => `${r.status} ${r.n}`).join(', ')}`,
          `email rows: ${rows.length} (${rows.filter((r) => r.status === 'sent').length} sent); (run, step) keys with more than one row: ${stepDuplicates}`,
          `at the relay: ${[...seen.values()].reduce((a, b) => a + b, 0)} messages of ${seen.size} distinct Message-IDs (${unmatched} matching no email row); Message-IDs received more than once: ${redelivered.length} (${redelivered.reduce((a, b) => a + b - 1, 0)} extra copies)`,
          `contacts with exactly 2 distinct emails: ${exactlyTwo} of ${count}; (contact, step) pairs with more than one distinct email: ${[...perContactStep.values()].filter((n) => n > 1).length}`,
        ].join('\n'),
      );
      await call('DELETE', `/api/v1/automations/${automationId}`);
      return {
        crash_runs: count,
        crash_seconds: seconds,
        crash_kills: kills.length,
        crash_runs_completed: runs.find((r) => r.status === 'completed')?.n ?? 0,
        crash_email_rows: rows.length,
        crash_step_duplicates: stepDuplicates,
        crash_contact_step_duplicates: [...perContactStep.values()].filter((n) => n > 1).length,
        crash_contacts_exactly_2: exactlyTwo,
        crash_distinct_messages: seen.size,
        crash_relay_redelivered_ids: redelivered.length,
        crash_relay_extra_copies: redelivered.reduce((a, b) => a + b - 1, 0),
        crash_unmatched_arrivals: unmatched,
      };
    }

    return {
      async warmup() {
        const herald = await oneProcess();
        const segment = await call('POST', '/api/v1/segments', { name: 'Warm-up', type: 'static' });
        const automationId = await createAutomation('Warm-up', {
          trigger: { type: 'segment.joined', segment_id: String(segment._id) },
          start: 'welcome',
          steps: [{ id: 'welcome', type: 'send_email', template_id: welcomeId, from }],
        });
        relay.clear();
        const warm = relayWatch('warm-');
        await importCsv(String(segment._id), csvOf('warm-', 200));
        await waitUntil('the warm-up welcomes', () => warm.count() >= 200, 300_000);
        await call('DELETE', `/api/v1/automations/${automationId}`);
        context.log(`warmed up; herald RSS after it ${fmt((await peakRss({ herald: herald.pid }, Promise.resolve())).herald!)} MB`);
      },
      async run(index) {
        const label = `r${index}`;
        const herald = await oneProcess();
        const figures: Figures = {};
        Object.assign(figures, await enrolment(label, sizes.contacts, herald));
        const stepsDone = (async () => {
          Object.assign(figures, await steps(label, sizes.stepRuns));
          Object.assign(figures, await waits(label, sizes.waitingRuns));
        })();
        figures.rss_steps_mb = (await peakRss({ herald: herald.pid }, stepsDone)).herald!;
        await stepsDone;
        Object.assign(figures, await crash(label, sizes.crashRuns));
        figures.rss_peak_mb = Math.max(figures.rss_import_mb!, figures.rss_broadcast_mb!, figures.rss_steps_mb);
        return figures;
      },
      close: () => Promise.resolve(),
    };
  },

  summarize(stats) {
    const ratio = med(stats, 'ratio_to_broadcast');
    const rss = med(stats, 'rss_peak_mb');
    const grown = med(stats, 'workflows_after') - med(stats, 'workflows_before');
    const stepsPerS = med(stats, 'steps_per_s');
    const p99 = med(stats, 'wait_late_p99_ms');
    const crashRuns = med(stats, 'crash_runs');
    const crashOk =
      med(stats, 'crash_runs_completed') === crashRuns &&
      med(stats, 'crash_step_duplicates') === 0 &&
      med(stats, 'crash_contacts_exactly_2') === crashRuns;
    return [
      {
        name: 'automations-enrolment',
        figure: `${fmt(med(stats, 'contacts'))} contacts imported into a static segment: import request → last welcome at the relay ${fmt(med(stats, 'import_to_last_welcome_s'))} s (import done, every run enrolled, at ${fmt(med(stats, 'import_completed_s'))} s; last email row at ${fmt(med(stats, 'last_email_row_s'))} s)`,
        ratio,
        baseline: `a broadcast to the same contacts, first request → last at the relay ${fmt(med(stats, 'broadcast_to_last_s'))} s`,
        target: { text: '≤ 120 %', met: ratio <= 1.2 },
      },
      {
        name: 'automations-footprint',
        figure: `peak RSS of the one Herald process (api, worker, smtp): import and welcomes ${fmt(med(stats, 'rss_import_mb'))} MB, broadcast ${fmt(med(stats, 'rss_broadcast_mb'))} MB, steps and waits ${fmt(med(stats, 'rss_steps_mb'))} MB`,
        ratio: rss / 600,
        baseline: 'the 600 MB target',
        target: { text: '< 600 MB', met: rss < 600 },
      },
      {
        name: 'automations-workflows',
        figure: `open Temporal workflows ${fmt(med(stats, 'workflows_before'))} before the import, ${fmt(med(stats, 'workflows_after'))} after the last welcome (automation actors ${fmt(med(stats, 'automation_workflows_before'))} → ${fmt(med(stats, 'automation_workflows_after'))}, for ${fmt(med(stats, 'contacts'))} runs)`,
        ratio: med(stats, 'workflows_after') / med(stats, 'workflows_before'),
        baseline: 'the open workflows before',
        target: { text: 'one more at most (the new automation’s actor)', met: grown <= 1 },
      },
      {
        name: 'automations-steps',
        figure: `${fmt(stepsPerS)} steps/s (timeline rows; ${fmt(med(stats, 'step_runs_per_s'))} runs/s of condition → tag → wait 1s → condition → exit, ${fmt(med(stats, 'step_runs'))} runs in ${fmt(med(stats, 'step_seconds'))} s, every run at its wait by ${fmt(med(stats, 'step_first_pass_s'))} s)`,
        ratio: med(stats, 'ratio_steps_to_raw_sql'),
        baseline: `the same changes as raw SQL in batches of 500, ${fmt(med(stats, 'baseline_rows_per_s'))} rows/s`,
        target: { text: '≥ 2,000 steps/s', met: stepsPerS >= 2000 },
      },
      {
        name: 'automations-waits',
        figure: `${fmt(med(stats, 'waiting_runs'))} runs waiting 10–30 s: each wait ends p50 ${fmt(med(stats, 'wait_late_p50_ms'))} ms, p99 ${fmt(p99)} ms, max ${fmt(med(stats, 'wait_late_max_ms'))} ms after its time (all parked ${fmt(med(stats, 'parked_s'))} s after the release; due after that: p99 ${fmt(med(stats, 'wait_late_after_parking_p99_ms'))} ms over ${fmt(med(stats, 'waits_after_parking'))})`,
        ratio: p99 / 2000,
        baseline: 'the 2 s p99 target',
        target: { text: 'p99 ≤ 2 s', met: p99 <= 2000 },
      },
      {
        name: 'automations-crash',
        figure: `${fmt(crashRuns)} runs of send → wait 5s → send, the worker killed ${fmt(med(stats, 'crash_kills'))} times: ${fmt(med(stats, 'crash_runs_completed'))} completed, automation step duplicates ${fmt(med(stats, 'crash_step_duplicates'))}, contacts with exactly 2 emails ${fmt(med(stats, 'crash_contacts_exactly_2'))}; relay re-deliveries of one email ${fmt(med(stats, 'crash_relay_extra_copies'))} (${fmt(med(stats, 'crash_relay_redelivered_ids'))} Message-IDs), in ${fmt(med(stats, 'crash_seconds'))} s`,
        ratio: med(stats, 'crash_contacts_exactly_2') / crashRuns,
        baseline: 'every contact getting exactly its 2 emails',
        target: { text: 'all completed, 0 step duplicates, 2 emails each', met: crashOk },
      },
    ];
  },
};

/** Lateness by the second its waits fell due (from the first): p50 / p99 / max and how many. */
function lateByDueSecond(rows: { late_ms: number; until_ms: number }[], firstMs: number): string {
  const bySecond = new Map<number, number[]>();
  for (const row of rows) {
    const second = Math.floor((row.until_ms - firstMs) / 1000);
    const values = bySecond.get(second) ?? [];
    values.push(row.late_ms);
    bySecond.set(second, values);
  }
  return [...bySecond]
    .sort((a, b) => a[0] - b[0])
    .map(([second, values]) => {
      const sorted = values.sort((a, b) => a - b);
      return `${second} s: ${fmt(quantile(sorted, 0.5))} / ${fmt(quantile(sorted, 0.99))} / ${fmt(sorted.at(-1)!)} (${sorted.length})`;
    })
    .join('\n');
}
