import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Organization, Segment } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { addSendingDomain } from '../support/sending.ts';

/** How long the pipeline gets to show a result on a loaded machine. */
const DEADLINE_MS = 90_000;
const TEST_TIMEOUT_MS = 240_000;

/**
 * Templates and broadcasts as a person uses them, in headless Chromium against a real Herald
 * (the api and the worker on Temporal's dev server) with the dev mail sink as the relay: write a
 * template and watch its preview follow the typing, publish it, compose a broadcast from it to a
 * segment, confirm the audience, launch it, and watch its counters move as the sink takes the
 * mail. The person is an owner, so the launch is live (a member's would stay in the sandbox).
 */
describe('templates and broadcasts in a browser, against the api, the worker and a relay', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let browser: Browser;
  let page: Page;
  let orgId: string;
  let domain: string;
  let templateId = '';
  const tag = `e2e-${process.pid}`;

  /** Reloads the page until `probe` holds (the pages are server-rendered; the broadcast page also refreshes itself). */
  async function reloadUntil(probe: () => Promise<boolean>, what: string): Promise<void> {
    await expect
      .poll(
        async () => {
          if (await probe()) return true;
          await page.reload();
          return probe();
        },
        { timeout: DEADLINE_MS, interval: 1000, message: `${what} (on ${page.url()})` },
      )
      .toBe(true);
  }

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    h = await startApiHarness({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      BOUNCE_DOMAIN: 'bounces.herald.test',
    });
    orgId = h.workspace.org.id;
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    await h.stack.orm.em.fork().nativeUpdate(Organization, { id: orgId }, { postalAddress: 'The Shop, 1 Market Street, Springfield' });
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    for (const name of ['ada', 'grace', 'edsger'])
      em.create(Contact, { orgId, email: `${name}-${tag}@example.com`, firstName: name, tags: [tag] });
    em.create(Segment, { orgId, name: 'Early readers', type: 'tag', tags: [tag] });
    await em.flush();

    browser = await launchBrowser();
    page = await newPage(browser);
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: orgId },
      { email: `owner-${tag}@example.com`, name: 'Ada Lovelace' },
    );
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.shutdown();
    await h?.close();
    await sink?.close();
  });

  it(
    'writes a template whose sandboxed preview follows the typing, and publishes it',
    async () => {
      await page.goto(`${h.api.url}/dashboard/templates`);
      expect(await page.getByText('No templates yet.').count()).toBe(1);
      await page.getByRole('link', { name: 'Write your first template' }).click();
      await page.getByLabel('Name').fill('Winter letter');
      await page.getByLabel('Folder').fill('newsletters');
      await page.getByLabel('Subject').fill('News for {{first_name}}');
      await page
        .getByLabel('HTML', { exact: true })
        .fill('<h1 style="color:#0b5cad">Hello {{first_name}}</h1><p>Read <a href="https://example.com/news">the news</a>.</p>');

      // The preview (a sandboxed frame) follows the form as you type, rendered with the sample variables.
      const preview = page.frameLocator('iframe[name="template-preview"]');
      await expect.poll(() => preview.locator('#preview-subject').textContent(), { timeout: 20_000 }).toBe('News for Ada');
      await expect
        .poll(() => preview.frameLocator('iframe.message-html').locator('h1').textContent(), { timeout: 20_000 })
        .toBe('Hello Ada');
      expect(await preview.locator('#preview-text').textContent()).toContain('Read the news [https://example.com/news]');
      expect(await preview.locator('#preview-variables').textContent()).toContain('{{first_name}}');
      expect(await page.locator('iframe[name="template-preview"]').getAttribute('sandbox')).toBe('');

      await page.getByRole('button', { name: 'Create template' }).click();
      await page.waitForURL(/\/dashboard\/templates\/[0-9a-f]{24}\?saved=1$/);
      templateId = /templates\/([0-9a-f]{24})/.exec(page.url())![1]!;
      expect(await page.getByText('Saved as version 1.').count()).toBe(1);
      await page.getByRole('button', { name: 'Publish' }).click();
      await page.waitForURL(/\?published=1$/);
      expect((await page.locator('.state.published').first().textContent())?.trim()).toBe('published');
      await expect.poll(() => preview.locator('#preview-subject').textContent(), { timeout: 20_000 }).toBe('News for Ada');
      expect(await page.locator('ul.variables').textContent()).toContain('{{first_name}}');
      // Tall enough for the whole editor: a full-page capture that resizes the view repaints the preview's frame blank.
      await page.setViewportSize({ width: 1280, height: 2000 });
      await expect.poll(() => preview.locator('#preview-subject').textContent(), { timeout: 20_000 }).toBe('News for Ada');
      await screenshot(page, 'dashboard-template-editor');
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(`${h.api.url}/dashboard/templates`);
      expect(await page.getByRole('link', { name: 'Winter letter' }).count()).toBe(1);
      await screenshot(page, 'dashboard-templates');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'composes a broadcast from the template to a segment, confirms its audience, launches it and watches it delivered',
    async () => {
      await page.goto(`${h.api.url}/dashboard/broadcasts`);
      expect(await page.getByText('No broadcasts yet.').count()).toBe(1);
      await page.getByRole('link', { name: 'Compose your first broadcast' }).click();
      await page.locator('#b-template').selectOption(templateId);
      await page.getByRole('button', { name: 'Use it' }).click();
      expect(await page.getByLabel('Subject').inputValue()).toBe('News for {{first_name}}');
      await page.getByLabel('From name').fill('The Shop');
      await page.getByLabel('From address').fill(`news@${domain}`);
      await page.getByLabel('Early readers').check();
      await page.getByRole('button', { name: 'Count the audience' }).click();
      expect(await page.getByRole('status').filter({ hasText: 'reach 3 people today' }).count()).toBe(1);
      await screenshot(page, 'dashboard-broadcast-compose');
      await page.getByRole('button', { name: 'Save draft' }).click();
      await page.waitForURL(/\/dashboard\/broadcasts\/[0-9a-f]{24}$/);

      await page.getByRole('link', { name: 'Review and send…' }).click();
      expect((await page.locator('#audience-size').textContent())?.trim()).toBe('3 people');
      await screenshot(page, 'dashboard-broadcast-launch');
      await page.getByRole('button', { name: 'Send to 3 people' }).click();
      await page.waitForURL(/\?done=launched$/);

      const counter = (name: string) => page.locator(`[data-counter="${name}"]`).textContent();
      await reloadUntil(async () => (await counter('delivered')) === '3', 'three messages delivered');
      await reloadUntil(async () => (await page.locator('.state.sent').count()) === 1, 'the broadcast sent');
      expect(await counter('recipients')).toBe('3');
      expect(sink.messages().filter((m) => m.rcptTo.some((to) => to.endsWith(`-${tag}@example.com`)))).toHaveLength(3);
      await expect.poll(() => page.locator('[data-chart="funnel"] canvas').count()).toBeGreaterThan(0);
      await screenshot(page, 'dashboard-broadcast');

      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${h.api.url}/dashboard/broadcasts`);
      expect(await page.locator('.state.sent').count()).toBe(1);
      expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);
      await screenshot(page, 'dashboard-broadcasts-phone');
    },
    TEST_TIMEOUT_MS,
  );
});
