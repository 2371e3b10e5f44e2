import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Automation, AutomationRun, Template, type Domain } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { createAutomationAuthoring } from '../../src/modules/automations/automation-authoring.ts';
import { assembleDefinition } from '../../src/modules/dashboard/dashboard-automations.builder.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addPublishedTemplate } from '../support/automations.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

/** How long the worker gets to finish a run on a loaded machine. */
const DEADLINE_MS = 90_000;
const TEST_TIMEOUT_MS = 240_000;

/**
 * The automations area as a person uses it, in headless Chromium against the api and the worker
 * (its automation actor drains the runs, Temporal's dev server from the global setup), with a
 * relay standing in for the provider: a welcome series built in the builder, published,
 * activated, and one contact's run followed to its end.
 */
describe('automations in a browser, against the api and the worker', () => {
  let dns: TestDnsServer;
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let h: ApiHarness;
  let worker: RunningWorker;
  let browser: Browser;
  let page: Page;
  let orgId: string;
  let domain: Domain;
  let welcome: Template;
  let reminder: Template;
  const tld = `a${process.pid}.example`;
  const logger = createLogger('warn');
  const mail = { MX: [{ exchange: 'mx.example.net', priority: 10 }] };

  /** The JSON view's definition. */
  const shownJson = async () => JSON.parse(await page.locator('#definition').inputValue()) as Record<string, unknown>;
  /** The builder form's fields as the browser would send them, in order. */
  const formPairs = () =>
    page.evaluate<[string, string][]>(
      "[...new FormData(document.querySelector('form[data-builder]'))].filter(([, v]) => typeof v === 'string')",
    );
  const card = (stepId: string, type: string) => page.getByRole('group', { name: `Step ${stepId} (${type})` });
  /** Adds a step with the builder's "Add step" (a round trip to the server, which draws the flow again). */
  async function addStep(type: string, where: string) {
    await page.getByLabel('New step').selectOption(type);
    await page.getByLabel('Where', { exact: true }).selectOption({ label: where });
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.waitForLoadState('load');
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    dns = await startDnsServer({ 'example.com': mail, '*.example.com': mail, 'mx.example.net': { A: ['192.0.2.25'] } });
    relay = await startCountingRelay();
    h = await startApiHarness({
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '300',
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      EMAIL_RETRY_SCHEDULE: '0s,300ms',
      EMAIL_RETRY_WINDOW: '5s',
    });
    orgId = h.workspace.org.id;
    worker = await startWorker(h.stack.config, logger);
    domain = await addSendingDomain(h.stack.orm, orgId, { domain: `mail.${tld}` });
    await setCredits(h.stack.orm, orgId, 100);
    // Named: the builder lists the published templates by name.
    for (const [name, set] of [
      ['Welcome email', (t: Template) => (welcome = t)],
      ['Reminder email', (t: Template) => (reminder = t)],
    ] as const) {
      const template = await addPublishedTemplate(h.stack.orm, orgId, {
        subject: `${name}: welcome aboard`,
        html: '<p>Welcome aboard.</p>',
      });
      await scopeToOrg(h.stack.orm.em.fork(), orgId).nativeUpdate(Template, { id: template.id }, { name });
      set(template);
    }

    browser = await launchBrowser();
    page = await newPage(browser, { viewport: { width: 1280, height: 900 } });
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: orgId },
      { email: `automations-${process.pid}@example.com`, name: 'Ada Lovelace' },
    );
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.shutdown();
    await h?.close();
    await relay?.close();
    await dns?.close();
  });

  it(
    'builds a welcome series in the builder, publishes and activates it; new contacts run through it to the end',
    async () => {
      await page.goto(`${h.api.url}/dashboard/automations`);
      await page.getByRole('link', { name: 'New automation' }).click();
      await page.waitForURL(/\/dashboard\/automations\/new$/);
      await page.getByLabel('Name', { exact: true }).fill('Welcome series');
      await page.getByLabel('Description').fill('Greets new contacts, and reminds those who did not open the first email.');
      expect(await page.getByLabel('Trigger', { exact: true }).inputValue()).toBe('contact.created');
      // Only the chosen trigger's fields show (the script); the segment field is for segment.joined.
      expect(await page.getByLabel('Tag', { exact: true }).isVisible()).toBe(false);

      // The first step: send the welcome email. The JSON view follows the builder as it is edited.
      const from = `hello@${domain.domain}`;
      await card('send-1', 'send_email').getByLabel('Template').selectOption({ label: 'Welcome email' });
      await card('send-1', 'send_email').getByLabel('From address').fill(from);
      expect((await shownJson()).steps).toEqual([{ id: 'send-1', type: 'send_email', template_id: welcome.id, from }]);

      // Then wait 2 s, then: was the welcome email opened? yes: exit; no: the reminder.
      await addStep('wait', 'After “send-1”');
      await card('wait-1', 'wait').getByLabel('Wait for').fill('2s');
      await addStep('condition', 'After “wait-1”');
      const check = card('check-1', 'condition');
      expect(await check.getByLabel('If').inputValue()).toBe('email');
      expect(await check.getByLabel('Was').inputValue()).toBe('opened');
      expect(await check.getByLabel('The email sent by').inputValue()).toBe('send-1');
      await addStep('exit', 'After “check-1”, when yes');
      await addStep('send_email', 'After “check-1”, when no');
      await card('send-2', 'send_email').getByLabel('Template').selectOption({ label: 'Reminder email' });
      await card('send-2', 'send_email').getByLabel('From address').fill(from);
      await card('send-2', 'send_email').getByLabel('From name').fill('Ada at Herald');

      // The script's JSON is what the server makes of the same fields.
      expect(await shownJson()).toEqual(assembleDefinition(await formPairs()));
      const branches = page.locator('.branches').first();
      expect(await branches.locator('.branch-name').allTextContents()).toEqual(['yes', 'no']);
      expect(await branches.locator('.branch.yes').getByRole('group', { name: 'Step exit-1 (exit)' }).count()).toBe(1);
      expect(await branches.locator('.branch.no').getByRole('group', { name: 'Step send-2 (send_email)' }).count()).toBe(1);

      await page.getByRole('button', { name: 'Validate' }).click();
      await page.waitForLoadState('load');
      expect(await page.getByRole('status').filter({ hasText: 'The definition is valid.' }).count()).toBe(1);
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, 'dashboard-automation-builder');

      await page.getByRole('button', { name: 'Create and publish' }).click();
      await page.waitForURL(/\/dashboard\/automations\/[0-9a-f]{24}\?created=1$/);
      const automationId = /automations\/([0-9a-f]{24})/.exec(page.url())![1]!;
      expect(await page.getByText('its definition published as version 1').count()).toBe(1);
      const definition = await createAutomationAuthoring({ orm: h.stack.orm }).definition(orgId, automationId);
      expect(definition?.version).toBe(1);
      expect(definition?.definition).toMatchObject({
        trigger: { type: 'contact.created' },
        start: 'send-1',
        steps: [
          { id: 'send-1', type: 'send_email', template_id: welcome.id, from, next: 'wait-1' },
          { id: 'wait-1', type: 'wait', duration: '2s', next: 'check-1' },
          { id: 'check-1', type: 'condition', if: { email: 'opened', step: 'send-1' }, yes: 'exit-1', no: 'send-2' },
          { id: 'send-2', type: 'send_email', template_id: reminder.id, from, from_name: 'Ada at Herald' },
          { id: 'exit-1', type: 'exit' },
        ],
      });

      await page.getByRole('button', { name: 'Activate' }).click();
      await page.waitForURL(/\?changed=active$/);
      expect((await page.locator('dl.facts .state').first().textContent())?.trim()).toBe('active');
      const automation = await scopeToOrg(h.stack.orm.em, orgId).findOneOrFail(Automation, { id: automationId });
      expect(automation).toMatchObject({ status: 'active', triggerType: 'contact.created' });

      // New contacts through the API: creating one enrols it in the active contact.created
      // automations and wakes their actors (the worker's automation actor then drains the runs).
      const people = ['grace', 'alan', 'edsger'].map((name) => `${name}-${process.pid}@example.com`);
      for (const email of people) {
        const created = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email } });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
      }
      const runs = () => scopeToOrg(h.stack.orm.em, orgId).find(AutomationRun, { automationId });
      // Enrolled with the contact, in its transaction.
      expect(await runs()).toHaveLength(people.length);

      // The runs page, reloaded until the runs have ended.
      await page.getByRole('link', { name: 'Runs' }).click();
      await page.waitForURL(new RegExp(`/dashboard/automations/${automationId}/runs$`));
      await expect
        .poll(
          async () => {
            await page.reload();
            const shown = (await page.locator('table.runs tbody .state').allTextContents()).map((text) => text.trim());
            // A failure says why (the run's error), not only that it is not completed.
            const errors = (await runs()).map((run) => run.error).filter(Boolean);
            return errors.length > 0 ? errors : shown;
          },
          { timeout: DEADLINE_MS, interval: 1000, message: 'the runs to complete' },
        )
        .toEqual(['completed', 'completed', 'completed']);
      const runRow = page.getByRole('row').filter({ hasText: people[0]! });
      await screenshot(page, 'dashboard-automation-runs');

      await runRow.getByRole('link').first().click();
      await page.waitForURL(new RegExp(`/dashboard/automations/${automationId}/runs/[0-9a-f]{24}$`));
      const timeline = page.locator('table.timeline tbody tr');
      const stepCells = (await timeline.locator('[data-label="Step"]').allTextContents()).map((text) => text.trim());
      const outcomes = (await timeline.locator('.outcome').allTextContents()).map((text) => text.trim());
      const entries = stepCells.map((step, i) => [step, outcomes[i]]);
      expect(entries).toEqual([
        ['send-1', 'sent'],
        ['wait-1', 'waiting'],
        ['wait-1', 'waited'],
        ['check-1', 'branched'],
        ['send-2', 'sent'],
        ['-', 'completed'],
      ]);
      expect(await timeline.nth(3).locator('[data-label="Detail"]').textContent()).toMatch(/branch\s*no/);
      expect(await timeline.nth(4).locator('[data-label="Detail"]').textContent()).toContain(reminder.id);
      await screenshot(page, 'dashboard-automation-run');

      // The counters: three runs, completed; two emails each, a credit each.
      await page.goto(`${h.api.url}/dashboard/automations/${automationId}`);
      const tile = async (label: string) =>
        (await page.locator('ul.tiles li').filter({ hasText: label }).locator('strong').textContent())?.trim();
      expect({
        total: await tile('Total runs'),
        active: await tile('Active runs'),
        completed: await tile('Completed'),
        failed: await tile('Failed'),
        sent: await tile('Emails sent'),
        credits: await tile('Credits used'),
      }).toEqual({ total: '3', active: '0', completed: '3', failed: '0', sent: '6', credits: '6' });
      // Every email reaches the relay.
      await expect.poll(() => relay.total(), { timeout: DEADLINE_MS, interval: 500 }).toBe(6);

      // At a phone's width the builder is one column and nothing overflows sideways.
      const phone = await newPage(browser, { viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
      await phone.goto(`${h.api.url}/dashboard/automations/${automationId}`);
      expect(await phone.getByRole('group', { name: 'Step send-2 (send_email)' }).isVisible()).toBe(true);
      expect(
        await phone.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
      ).toBeLessThanOrEqual(0);
      await phone.close();
    },
    TEST_TIMEOUT_MS,
  );
});
