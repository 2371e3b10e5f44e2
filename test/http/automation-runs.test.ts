import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Automation, AutomationRun, AutomationRunStep, Template } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { AppError } from '../../src/errors.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { createAutomationAuthoring } from '../../src/modules/automations/automation-authoring.ts';
import type { TouchedAutomation } from '../../src/modules/automations/automation-runs.repo.ts';
import { createAutomationsService } from '../../src/modules/automations/automations.service.ts';
import { createSegmentsService } from '../../src/modules/segments/segments.service.ts';
import { automationActorContract } from '../../workflows/automation.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import {
  EXIT_ONLY_DEFINITION,
  createPublishedAutomation,
  insertContact,
  insertRun,
  insertRunStep,
  insertStatShard,
} from '../support/automation-rows.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';
import { addSendingDomain } from '../support/sending.ts';

interface RunBody {
  _id: string;
  automation_id: string;
  contact_id: string;
  status: string;
  step_id: string | null;
  due_at: string | null;
  waiting_for: string | null;
  definition_version: number;
  exit_reason: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
  timeline?: { step_id: string; kind: string; outcome: string; detail: Record<string, unknown>; at: string }[];
}

const RUN_FIELDS = [
  '_id',
  'automation_id',
  'contact_id',
  'status',
  'step_id',
  'due_at',
  'waiting_for',
  'definition_version',
  'exit_reason',
  'error',
  'created_at',
  'updated_at',
  'ended_at',
].sort();

const data = (response: ApiResponse) => response.body.data as { stats: Record<string, number> };

function expectStatus(response: ApiResponse, status: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
}

/** The error a promise rejects with, which must be an AppError. */
async function appError(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('automations: definitions, lifecycle and run history', () => {
  let h: ApiHarness;
  let orgId: string;
  let authoring: ReturnType<typeof createAutomationAuthoring>;

  const runs = (id: string, query = '', request = h.request) => request('GET', `/api/v1/automations/${id}/runs${query}`);
  const run = (id: string, runId: string, request = h.request) => request('GET', `/api/v1/automations/${id}/runs/${runId}`);
  const definitionOf = (id: string, request = h.request) => request('GET', `/api/v1/automations/${id}/definition`);
  const patch = (id: string, body: unknown) => h.request('PATCH', `/api/v1/automations/${id}`, { headers: idem(), body });
  const remove = (id: string) => h.request('DELETE', `/api/v1/automations/${id}`, { headers: idem() });
  const reload = async (id: string) => scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(Automation, { id });

  beforeAll(async () => {
    h = await startApiHarness();
    orgId = h.workspace.org.id;
    authoring = createAutomationAuthoring({ orm: h.stack.orm });
  });
  afterAll(() => h.close());

  describe('publishing a definition (createAutomationAuthoring)', () => {
    async function publishedTemplate(status: 'published' | 'draft' = 'published', workspace = orgId): Promise<string> {
      const em = scopeToOrg(h.stack.orm.em, workspace);
      const template = em.create(Template, { orgId: workspace, name: unique('template'), subject: 'Hi', html: '<p>Hi</p>', status });
      await em.flush();
      return template.id;
    }

    it('creates with version 1, publishes version 2, and GET /definition answers the newest', async () => {
      const template = await publishedTemplate();
      const domain = await addSendingDomain(h.stack.orm, orgId);
      const first = await authoring.create(orgId, { name: 'Welcome', definition: EXIT_ONLY_DEFINITION });
      expect(first).toMatchObject({ version: 1, triggerType: 'contact.created', triggerKey: null, status: 'draft' });
      const second = {
        trigger: { type: 'tag.added', tag: 'trial' },
        reentry: { mode: 'cooldown', cooldown: '30d' },
        start: 'hello',
        steps: [
          { id: 'hello', type: 'send_email', template_id: template, from: `hi@${domain.domain}`, next: 'pause' },
          { id: 'pause', type: 'wait', duration: '2d', next: null },
        ],
      };
      const published = await authoring.publish(orgId, first.id, second);
      expect(published).toMatchObject({ version: 2, triggerType: 'tag.added', triggerKey: 'trial' });
      const response = await definitionOf(first.id);
      expectStatus(response, 200);
      expect(response.body.data).toEqual({ version: 2, definition: { ...second, timezone: 'UTC' } });
      expect((await h.request('GET', `/api/v1/automations/${first.id}`)).body.data).toMatchObject({
        trigger_type: 'tag.added',
        version: 2,
      });
    });

    it('refuses an invalid definition with every problem in details.fields (400 DEFINITION_INVALID)', async () => {
      const error = await appError(
        authoring.create(orgId, {
          name: 'Broken',
          definition: {
            trigger: { type: 'contact.created' },
            start: 'a',
            steps: [
              { id: 'a', type: 'wait', duration: '1d', next: 'ghost' },
              { id: 'a', type: 'exit' },
              { id: 'w', type: 'wait_for_event', event: 'email.opened', timeout: '1d', next: null },
            ],
          },
        }),
      );
      expect(error.code).toBe('invalid_request');
      expect(error.message).toMatch(/^Invalid definition: steps\.1\.id: step id "a" is used twice\.$/);
      expect(error.details).toEqual({
        reason: 'DEFINITION_INVALID',
        fields: [
          { path: 'definition.steps.1.id', location: 'body', type: 'definition', message: 'step id "a" is used twice' },
          { path: 'definition.steps.0.next', location: 'body', type: 'definition', message: 'there is no step "ghost"' },
          {
            path: 'definition.steps.2.step',
            location: 'body',
            type: 'definition',
            message: 'an email event wait names the send_email step whose email it waits on',
          },
        ],
      });
      expect(await scopeToOrg(h.stack.orm.em, orgId).count(Automation, { name: 'Broken' })).toBe(0);
    });

    it("refuses an unpublished template, a sender on an unverified domain and another workspace's segment, all at once", async () => {
      const draft = await publishedTemplate('draft');
      const pending = await addSendingDomain(h.stack.orm, orgId, { status: 'pending', verified: false });
      const other = await createOrgWithKey(h.stack.orm);
      const foreignSegment = (
        await createSegmentsService({ orm: h.stack.orm }).createSegment(other.org.id, {
          name: unique('segment'),
          description: '',
          tags: [],
        })
      ).segment.id;
      const foreignTemplate = await publishedTemplate('published', other.org.id);
      const created = await authoring.create(orgId, { name: 'To fix' });
      const error = await appError(
        authoring.publish(orgId, created.id, {
          trigger: { type: 'segment.joined', segment_id: foreignSegment },
          start: 'one',
          steps: [
            { id: 'one', type: 'send_email', template_id: draft, from: `hi@${pending.domain}`, next: 'two' },
            { id: 'two', type: 'send_email', template_id: foreignTemplate, from: 'hi@nowhere.example', next: 'add' },
            { id: 'add', type: 'add_to_segment', segment_id: foreignSegment, next: null },
          ],
        }),
      );
      expect(error.details?.reason).toBe('DEFINITION_INVALID');
      const fields = (error.details?.fields as { path: string; message: string }[]).map((f) => `${f.path}: ${f.message}`);
      expect(fields.sort()).toEqual(
        [
          `definition.steps.0.template_id: template ${draft} is draft, not published`,
          `definition.steps.1.template_id: template ${foreignTemplate} does not exist in this workspace`,
          `definition.steps.0.from: the domain ${pending.domain} is pending, not verified`,
          'definition.steps.1.from: nowhere.example is not a sending domain of this workspace',
          `definition.trigger.segment_id: segment ${foreignSegment} does not exist in this workspace`,
          `definition.steps.2.segment_id: segment ${foreignSegment} does not exist in this workspace`,
        ].sort(),
      );
      expect(await reload(created.id)).toMatchObject({ version: 1, definitionId: null });
      expectError(await definitionOf(created.id), 404, 'not_found');
    });

    it('refuses to publish for an archived automation (409 AUTOMATION_ARCHIVED)', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status: 'archived' });
      const error = await appError(authoring.publish(orgId, automation.id, EXIT_ONLY_DEFINITION));
      expect(error.code).toBe('conflict');
      expect(error.details).toEqual({ reason: 'AUTOMATION_ARCHIVED' });
    });
  });

  describe('archiving ends the runs in progress', () => {
    /** A published automation with three active runs and one completed, its counters as the engine would have left them. */
    async function automationWithRuns(status: 'active' | 'paused' = 'active') {
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status });
      const open = [
        await insertRun(h.stack.orm, orgId, automation, { stepId: 'welcome' }),
        await insertRun(h.stack.orm, orgId, automation, { stepId: 'opened', waitingFor: 'email.opened:0123456789abcdef01234567' }),
        await insertRun(h.stack.orm, orgId, automation, { stepId: null }),
      ];
      const done = await insertRun(h.stack.orm, orgId, automation, { status: 'completed' });
      await insertStatShard(h.stack.orm, orgId, automation.id, 2, { total_runs: 4, active_runs: 4, emails_sent: 3 });
      await insertStatShard(h.stack.orm, orgId, automation.id, 5, { active_runs: -1, completed_runs: 1 });
      return { automation, open, done };
    }

    async function expectEnded(runIds: string[]) {
      const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
      const rows = await em.find(AutomationRun, { id: { $in: runIds } });
      for (const row of rows) {
        expect(row).toMatchObject({ status: 'exited', exitReason: 'archived', dueAt: null, waitingFor: null, leaseUntil: null });
        expect(row.endedAt).toBeInstanceOf(Date);
      }
      const entries = await em.find(AutomationRunStep, { runId: { $in: runIds } }, { orderBy: { runId: 'asc' } });
      expect(entries).toHaveLength(runIds.length);
      for (const entry of entries) expect(entry).toMatchObject({ kind: 'lifecycle', outcome: 'exited', detail: { reason: 'archived' } });
      return { rows, entries };
    }

    it('PATCH status archived exits every open run, with a timeline entry each, and moves them out of activeRuns', async () => {
      const { automation, open, done } = await automationWithRuns();
      const other = await automationWithRuns();
      const response = await patch(automation.id, { status: 'archived' });
      expectStatus(response, 200);
      expect((response.body.data as { stats: unknown }).stats).toEqual({
        totalRuns: 4,
        activeRuns: 0,
        completedRuns: 1,
        failedRuns: 0,
        emailsSent: 3,
        creditsUsed: 0,
      });
      const { rows, entries } = await expectEnded(open.map((r) => r.id));
      const stepOf = new Map(entries.map((e) => [e.runId, e.stepId]));
      expect(open.map((r) => stepOf.get(r.id))).toEqual(['welcome', 'opened', 'archived']);
      expect(rows.map((r) => r.stepId).sort()).toEqual([null, 'opened', 'welcome'].sort());
      const untouched = await scopeToOrg(h.stack.orm.em.fork(), orgId).findOneOrFail(AutomationRun, { id: done.id });
      expect(untouched).toMatchObject({ status: 'completed', exitReason: null });
      // Another automation's runs go on.
      const theirs = await runs(other.automation.id, '?status=active');
      expect((theirs.body.data as RunBody[]).map((r) => r._id).sort()).toEqual(other.open.map((r) => r.id).sort());
      // The runs read as exited.
      const exited = (await runs(automation.id, '?status=exited')).body.data as RunBody[];
      expect(exited).toHaveLength(3);
      for (const item of exited) expect(item).toMatchObject({ status: 'exited', exit_reason: 'archived', due_at: null, waiting_for: null });
    });

    it('DELETE does the same once; a second DELETE and a move back to active change no run and no counter', async () => {
      const { automation, open } = await automationWithRuns('paused');
      expectStatus(await remove(automation.id), 200);
      await expectEnded(open.map((r) => r.id));
      const stats = (await h.request('GET', `/api/v1/automations/${automation.id}`)).body.data as { stats: Record<string, number> };
      expect(stats.stats).toMatchObject({ totalRuns: 4, activeRuns: 0, completedRuns: 1, failedRuns: 0 });
      expectStatus(await remove(automation.id), 200);
      expect(data(await patch(automation.id, { status: 'active' })).stats).toEqual(stats.stats);
      await expectEnded(open.map((r) => r.id));
    });

    it('pausing and moving to draft leave the runs as they are', async () => {
      const { automation, open } = await automationWithRuns();
      for (const status of ['paused', 'draft', 'active'] as const) expectStatus(await patch(automation.id, { status }), 200);
      const rows = await scopeToOrg(h.stack.orm.em.fork(), orgId).find(AutomationRun, { id: { $in: open.map((r) => r.id) } });
      expect(rows.map((r) => r.status)).toEqual(['active', 'active', 'active']);
      expect(data(await h.request('GET', `/api/v1/automations/${automation.id}`)).stats).toMatchObject({ activeRuns: 3 });
    });
  });

  describe('activating wakes the actor of an automation with runs in progress', () => {
    it('asks for a wake-up after the commit only when there are open runs, and says whether its drain is running', async () => {
      const woken: TouchedAutomation[] = [];
      const service = createAutomationsService({ orm: h.stack.orm, wake: (touched) => woken.push(...touched) });
      const withRuns = await createPublishedAutomation(h.stack.orm, orgId, { status: 'paused' });
      await insertRun(h.stack.orm, orgId, withRuns);
      const empty = await createPublishedAutomation(h.stack.orm, orgId, { status: 'draft' });
      const unpublished = await authoring.create(orgId, { name: 'No definition yet' });

      await service.updateAutomation(orgId, empty.id, { status: 'active' });
      await service.updateAutomation(orgId, unpublished.id, { status: 'active' });
      expect(woken).toEqual([]);
      expect(await reload(unpublished.id)).toMatchObject({ status: 'active', definitionId: null });

      await service.updateAutomation(orgId, withRuns.id, { status: 'active' });
      expect(woken).toEqual([{ orgId, automationId: withRuns.id, draining: false }]);
      await service.updateAutomation(orgId, withRuns.id, { name: 'Renamed while active' });
      await service.updateAutomation(orgId, withRuns.id, { status: 'active' });
      await service.updateAutomation(orgId, withRuns.id, { status: 'paused' });
      expect(woken).toHaveLength(1);

      await h.stack.orm.em
        .fork()
        .execute(`update automations set drain_lease_until = now() + interval '30 seconds' where id = ?`, [withRuns.id]);
      await service.updateAutomation(orgId, withRuns.id, { status: 'active' });
      expect(woken.at(-1)).toEqual({ orgId, automationId: withRuns.id, draining: true });

      await service.archiveAutomation(orgId, withRuns.id);
      await service.updateAutomation(orgId, withRuns.id, { status: 'active' });
      expect(woken).toHaveLength(2);
    });

    it('PATCH status active signals (and starts) the actor automation:<id> in Temporal', async () => {
      let temporal: TemporalClientHandle | undefined;
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status: 'paused' });
      await insertRun(h.stack.orm, orgId, automation);
      const workflowId = automationActorContract.workflowId({ orgId, automationId: automation.id }, h.stack.config.temporal.schedulePrefix);
      try {
        temporal = await connectTemporalClient(h.stack.config);
        expectStatus(await patch(automation.id, { status: 'active' }), 200);
        const handle = temporal.client.workflow.getHandle(workflowId);
        await expect
          .poll(async () => (await handle.describe().catch(() => null))?.status.name ?? 'absent', { timeout: 15_000, interval: 200 })
          .toBe('RUNNING');
      } finally {
        await temporal?.client.workflow
          .getHandle(workflowId)
          .terminate('test over')
          .catch(() => {});
        await temporal?.close();
      }
    });
  });

  describe('GET /api/v1/automations/{id}/runs', () => {
    it('lists the runs newest first, page by page, with exactly the run fields and the definition version each follows', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status: 'active' });
      const base = Date.now() - 3_600_000;
      const created: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        created.push((await insertRun(h.stack.orm, orgId, automation, { createdAt: new Date(base + i * 1_000) })).id);
      }
      const v2 = await authoring.publish(orgId, automation.id, {
        ...EXIT_ONLY_DEFINITION,
        start: 'end',
        steps: [{ id: 'end', type: 'exit' }],
      });
      for (let i = 3; i < 5; i += 1) {
        created.push((await insertRun(h.stack.orm, orgId, v2, { stepId: 'end', createdAt: new Date(base + i * 1_000) })).id);
      }
      await insertRun(h.stack.orm, orgId, await createPublishedAutomation(h.stack.orm, orgId));

      const seen: RunBody[] = [];
      let cursor: string | null = null;
      do {
        const response: ApiResponse = await runs(automation.id, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expectStatus(response, 200);
        const page = response.body.data as RunBody[];
        expect(page.length).toBeLessThanOrEqual(2);
        for (const item of page) expect(Object.keys(item).sort()).toEqual(RUN_FIELDS);
        seen.push(...page);
        cursor = (response.body.meta as { pagination: { next_cursor: string | null } }).pagination.next_cursor;
      } while (cursor);
      expect(seen.map((r) => r._id)).toEqual([...created].reverse());
      expect(seen.map((r) => r.definition_version)).toEqual([2, 2, 1, 1, 1]);
      expect(seen[0]).toMatchObject({
        automation_id: automation.id,
        status: 'active',
        step_id: 'end',
        waiting_for: null,
        exit_reason: null,
        error: null,
        ended_at: null,
        due_at: expect.stringMatching(/Z$/),
        created_at: new Date(base + 4_000).toISOString(),
      });
    });

    it('filters on status and contact_id, together or apart', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status: 'active' });
      const contact = await insertContact(h.stack.orm, orgId);
      const mine = [
        await insertRun(h.stack.orm, orgId, automation, { contactId: contact.id, status: 'completed' }),
        await insertRun(h.stack.orm, orgId, automation, { contactId: contact.id }),
      ];
      const failed = await insertRun(h.stack.orm, orgId, automation, { status: 'failed', error: 'template 123 was deleted' });
      await insertRun(h.stack.orm, orgId, automation, { status: 'exited', exitReason: 'goal' });
      const ids = async (query: string) => {
        const response = await runs(automation.id, query);
        expectStatus(response, 200);
        return (response.body.data as RunBody[]).map((r) => r._id).sort();
      };
      expect(await ids(`?contact_id=${contact.id}`)).toEqual(mine.map((r) => r.id).sort());
      expect(await ids(`?contact_id=${contact.id.toUpperCase()}&status=completed`)).toEqual([mine[0]!.id]);
      expect(await ids(`?status=failed`)).toEqual([failed.id]);
      expect(((await runs(automation.id, '?status=failed')).body.data as RunBody[])[0]).toMatchObject({
        status: 'failed',
        error: 'template 123 was deleted',
        ended_at: expect.any(String),
        due_at: null,
      });
      expect(await ids('?status=exited&limit=100')).toHaveLength(1);
      expect(await ids(`?status=active&contact_id=${'0'.repeat(24)}`)).toEqual([]);
      expect(await ids('')).toHaveLength(4);
    });

    it('refuses a cursor replayed with other filters, an unknown status and a malformed contact_id', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId);
      for (let i = 0; i < 3; i += 1) await insertRun(h.stack.orm, orgId, automation, { status: 'completed' });
      const first = await runs(automation.id, '?limit=1&status=completed');
      const cursor = (first.body.meta as { pagination: { next_cursor: string } }).pagination.next_cursor;
      expectStatus(await runs(automation.id, `?limit=1&status=completed&cursor=${encodeURIComponent(cursor)}`), 200);
      expectError(await runs(automation.id, `?limit=1&cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request');
      expectError(await runs(automation.id, '?status=paused'), 400, 'invalid_request');
      expectError(await runs(automation.id, '?contact_id=nope'), 400, 'invalid_request');
      expectError(await runs(automation.id, '?limit=101'), 400, 'invalid_request');
    });
  });

  describe('GET /api/v1/automations/{id}/runs/{runId}', () => {
    it('answers the run with its timeline in the order it happened', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId, { status: 'active' });
      const target = await insertRun(h.stack.orm, orgId, automation, { stepId: 'pause' });
      const base = Date.now() - 60_000;
      await insertRunStep(h.stack.orm, orgId, target.id, {
        stepId: 'pause',
        kind: 'wait',
        outcome: 'waiting',
        detail: { until: 'x' },
        createdAt: new Date(base + 2_000),
      });
      await insertRunStep(h.stack.orm, orgId, target.id, {
        stepId: 'welcome',
        kind: 'send_email',
        outcome: 'sent',
        detail: { email_id: 'e1' },
        createdAt: new Date(base),
      });
      const otherRun = await insertRun(h.stack.orm, orgId, automation);
      await insertRunStep(h.stack.orm, orgId, otherRun.id, { stepId: 'welcome', kind: 'send_email', outcome: 'skipped' });

      const response = await run(automation.id, target.id.toUpperCase());
      expectStatus(response, 200);
      const body = response.body.data as RunBody;
      expect(Object.keys(body).sort()).toEqual([...RUN_FIELDS, 'timeline'].sort());
      expect(body).toMatchObject({
        _id: target.id,
        automation_id: automation.id,
        status: 'active',
        step_id: 'pause',
        definition_version: 1,
      });
      expect(body.timeline).toEqual([
        { step_id: 'welcome', kind: 'send_email', outcome: 'sent', detail: { email_id: 'e1' }, at: new Date(base).toISOString() },
        { step_id: 'pause', kind: 'wait', outcome: 'waiting', detail: { until: 'x' }, at: new Date(base + 2_000).toISOString() },
      ]);
      expect(((await run(automation.id, otherRun.id)).body.data as RunBody).timeline).toHaveLength(1);
    });

    it('answers 404 for a run of another automation, an unknown run, and 400 for a malformed id', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId);
      const elsewhere = await insertRun(h.stack.orm, orgId, await createPublishedAutomation(h.stack.orm, orgId));
      expectError(await run(automation.id, elsewhere.id), 404, 'not_found');
      expectError(await run(automation.id, 'f'.repeat(24)), 404, 'not_found');
      expectError(await run(automation.id, 'not-an-id'), 400, 'invalid_request');
    });
  });

  describe('GET /api/v1/automations/{id}/definition', () => {
    it('answers 404 DEFINITION_NOT_PUBLISHED for an automation without one', async () => {
      const bare = await authoring.create(orgId, { name: 'Bare' });
      const response = await definitionOf(bare.id);
      expectError(response, 404, 'not_found');
      expect(response.body.error?.details).toEqual({ reason: 'DEFINITION_NOT_PUBLISHED' });
      expect(response.body.error?.message).toMatch(/has no published definition/);
    });
  });

  describe("another workspace's automations and runs, and scopes", () => {
    it('answers 404 for every history read of another workspace, and the owner reads them', async () => {
      const other = await createOrgWithKey(h.stack.orm);
      const theirs = await createPublishedAutomation(h.stack.orm, other.org.id);
      const theirRun = await insertRun(h.stack.orm, other.org.id, theirs);
      const mine = await createPublishedAutomation(h.stack.orm, orgId);
      expectError(await runs(theirs.id), 404, 'not_found');
      expectError(await run(theirs.id, theirRun.id), 404, 'not_found');
      expectError(await run(mine.id, theirRun.id), 404, 'not_found');
      expectError(await definitionOf(theirs.id), 404, 'not_found');
      const owner = apiClient(h.api.url, other.key);
      expectStatus(await runs(theirs.id, '', owner), 200);
      expectStatus(await run(theirs.id, theirRun.id, owner), 200);
      expectStatus(await definitionOf(theirs.id, owner), 200);
    });

    it('needs automations:read (403 missing_scope with automations:write alone)', async () => {
      const automation = await createPublishedAutomation(h.stack.orm, orgId);
      const one = await insertRun(h.stack.orm, orgId, automation);
      const writer = apiClient(h.api.url, (await createOrgWithKey(h.stack.orm, { scopes: ['automations:write'] })).key);
      const reader = await createOrgWithKey(h.stack.orm, { scopes: ['automations:read'] });
      for (const path of [`/${automation.id}/runs`, `/${automation.id}/runs/${one.id}`, `/${automation.id}/definition`]) {
        const refused = await writer('GET', `/api/v1/automations${path}`);
        expectError(refused, 403, 'missing_scope');
        expect(refused.body.error?.details).toEqual({ required_scope: 'automations:read' });
      }
      const own = await createPublishedAutomation(h.stack.orm, reader.org.id);
      expectStatus(await runs(own.id, '', apiClient(h.api.url, reader.key)), 200);
    });
  });
});
