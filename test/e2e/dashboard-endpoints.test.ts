import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookEndpoint } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { AREAS } from '../../src/modules/dashboard/dashboard.pages.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { addSendingDomain } from '../support/sending.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/** How long the pipeline gets to show a result on a loaded machine. */
const DEADLINE_MS = 60_000;
const TEST_TIMEOUT_MS = 180_000;
/** axe-core's browser build, evaluated in each page (DevTools evaluation is not an inline script: the page's CSP stays on). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; html: string }[];
}

/** The serious and critical accessibility violations axe-core finds on the page (WCAG 2.x A and AA rules). */
async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
      .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, html: n.html.slice(0, 200) })) })))`,
  );
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * Webhook endpoints as a person manages them in headless Chromium, against the api and the worker
 * (Temporal's dev server from the global setup) with a receiver on 127.0.0.1; then every area of
 * the navigation, and the detail pages its lists link to, through axe-core and at phone width.
 */
describe('dashboard endpoints, settings and accessibility in a browser', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let member: Page;
  let owner: Page;
  const logger = createLogger('warn');

  async function signedInPage(role: 'owner' | 'member'): Promise<Page> {
    const page = await newPage(browser);
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: h.workspace.org.id },
      { email: `${role}-${process.pid}@example.com`, name: role === 'owner' ? 'Olive Owner' : 'Max Member', role },
    );
    return page;
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    receiver = await startWebhookReceiver();
    h = await startApiHarness({ WEBHOOK_RETRY_SCHEDULE: '0s,200ms,200ms' });
    worker = await startWorker(h.stack.config, logger);
    browser = await launchBrowser();
    member = await signedInPage('member');
    owner = await signedInPage('owner');
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    receiver?.releaseHanging();
    await worker?.shutdown();
    await h?.close();
    await receiver?.close();
  });

  it(
    'adds an endpoint with the events picker, sends it a test event and sees the attempt, edits, disables and deletes it',
    async () => {
      receiver.respond('/orders', () => ({ status: 202, body: 'stored test event' }));
      await member.goto(`${h.api.url}/dashboard/webhooks`);
      await member.getByRole('link', { name: 'Add an endpoint' }).click();
      await member.getByLabel('Name').fill('Orders service');
      await member.getByLabel('URL').fill(receiver.url('/orders'));
      await member.getByRole('checkbox', { name: 'email.delivered' }).check();
      await member.getByRole('checkbox', { name: 'email.bounced' }).check();
      await screenshot(member, 'dashboard-webhook-form');
      await member.getByRole('button', { name: 'Add endpoint' }).click();
      expect(await member.getByRole('heading', { level: 1 }).textContent()).toBe('Orders service');
      expect((await member.locator('#new-secret').textContent())?.trim()).toMatch(/^whsec_/);
      const endpoint = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(WebhookEndpoint, {
        name: 'Orders service',
      });
      expect(endpoint.events).toEqual(['email.delivered', 'email.bounced']);

      await member.getByRole('button', { name: 'Send a test event' }).click();
      // The page waits for the delivery, then shows it; a delivery on its way reloads itself until it has an answer.
      await member.waitForURL(/\/dashboard\/webhooks\/deliveries\/[0-9a-f]{24}$/, { timeout: DEADLINE_MS });
      const attempt = member.getByRole('row').filter({ has: member.getByRole('rowheader', { name: '#1', exact: true }) });
      await expect.poll(() => attempt.count(), { timeout: DEADLINE_MS, interval: 500 }).toBe(1);
      expect((await attempt.getByRole('cell').nth(1).textContent())?.trim()).toBe('202');
      expect(await attempt.getByRole('cell').nth(4).textContent()).toContain('stored test event');
      expect((await member.locator('dl.facts .state').first().textContent())?.trim()).toBe('delivered');
      const [request] = receiver.requests('/orders');
      expect(request?.headers['herald-event-type']).toBe('webhook.test');
      expect(JSON.parse(request!.body)).toMatchObject({ type: 'webhook.test', data: { endpoint_id: endpoint.id } });
      await screenshot(member, 'dashboard-webhook-test-delivery');

      await member.getByRole('link', { name: 'Orders service' }).click();
      await member.getByRole('link', { name: 'Edit' }).click();
      await member.getByLabel('Name').fill('Orders & billing');
      await member.getByRole('checkbox', { name: /Every event/ }).check();
      await member.getByRole('button', { name: 'Save changes' }).click();
      await member.waitForURL(/\?done=saved$/);
      expect(await member.getByRole('heading', { level: 1 }).textContent()).toBe('Orders & billing');
      expect(await member.getByText('Your changes were saved.').count()).toBe(1);

      await member.getByRole('button', { name: 'Disable' }).click();
      await member.waitForURL(/\?done=disabled$/);
      expect((await member.locator('dl.facts .state').first().textContent())?.trim()).toBe('disabled');
      expect(await member.getByRole('button', { name: 'Send a test event' }).count()).toBe(0);
      await member.getByRole('button', { name: 'Enable' }).click();
      await member.waitForURL(/\?done=enabled$/);

      await member.getByRole('link', { name: 'Delete…' }).click();
      expect(await member.getByRole('heading', { level: 1 }).textContent()).toBe('Delete Orders & billing?');
      expect(await member.getByText('cannot be undone').count()).toBe(1);
      await member.getByRole('button', { name: 'Delete endpoint' }).click();
      await member.waitForURL(/\/dashboard\/webhooks\?deleted=1$/);
      expect(await member.getByText('The endpoint was deleted.').count()).toBe(1);
      expect(await member.getByText('No endpoints yet.').count()).toBe(1);
      expect(await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).count(WebhookEndpoint, { id: endpoint.id })).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'lets an owner edit the workspace settings, which a member only reads',
    async () => {
      await owner.goto(`${h.api.url}/dashboard/settings`);
      await owner.getByLabel('Postal address').fill('Herald Ltd\n1 Example Street\nLondon');
      await owner.getByRole('button', { name: 'Save settings' }).click();
      await owner.waitForURL(/\?saved=1$/);
      expect(await owner.locator('.address').textContent()).toBe('Herald Ltd\n1 Example Street\nLondon');
      await screenshot(owner, 'dashboard-settings');
      await member.goto(`${h.api.url}/dashboard/settings`);
      expect(await member.getByLabel('Postal address').count()).toBe(0);
      expect(await member.getByText('Only an owner of the workspace can change these settings.').count()).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'has no serious or critical axe-core violations on any area of the navigation, its detail pages and the forms',
    async () => {
      const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id, { domain: `a11y-${process.pid}.example.com` });
      const created = await h.request('POST', '/api/v1/webhooks', {
        headers: idem(),
        body: { name: 'Audit log', url: receiver.url('/audit'), events: ['contact.created'] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const endpointId = (created.body.data as { id: string }).id;
      const extra = [
        '/dashboard/webhooks/new',
        `/dashboard/webhooks/${endpointId}/edit`,
        `/dashboard/webhooks/${endpointId}/delete`,
        `/dashboard/domains/${domain.id}/delete`,
      ];
      // The check itself works under the pages' CSP: an image without a text alternative is found.
      await owner.goto(`${h.api.url}/dashboard/keys`);
      await owner.evaluate(`document.querySelector('main').append(Object.assign(document.createElement('img'), { src: 'data:,' }))`);
      expect((await seriousViolations(owner)).map((v) => v.id)).toContain('image-alt');
      const found: Record<string, AxeViolation[]> = {};
      const check = async (path: string) => {
        await owner.goto(`${h.api.url}${path}`);
        const violations = await seriousViolations(owner);
        if (violations.length > 0) found[path] = violations;
      };
      // Every area of the navigation (areas added later are checked too), and the first detail page its list links to.
      const checked: string[] = [];
      for (const [area] of AREAS) {
        await check(`/dashboard/${area}`);
        checked.push(`/dashboard/${area}`);
        const hrefs = await owner.evaluate<string[]>(
          `[...document.querySelectorAll('main a[href^="/dashboard/${area}/"]')].map((a) => a.getAttribute('href'))`,
        );
        const detail = hrefs.find((href) => /\/[0-9a-f]{24}$/.test(href));
        if (detail) {
          await check(detail);
          checked.push(detail);
        }
      }
      for (const path of extra) await check(path);
      expect(checked).toContain(`/dashboard/domains/${domain.id}`);
      expect(checked).toContain(`/dashboard/webhooks/${endpointId}`);
      expect(found, JSON.stringify(found, null, 2)).toEqual({});
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'is usable from the keyboard: a skip link first, a visible focus ring, labelled controls',
    async () => {
      await owner.goto(`${h.api.url}/dashboard/webhooks/new`);
      await owner.keyboard.press('Tab');
      const focused = () =>
        owner.evaluate<{ text: string; outline: string }>(
          '({ text: document.activeElement.textContent.trim(), outline: getComputedStyle(document.activeElement).outlineStyle })',
        );
      expect(await focused()).toEqual({ text: 'Skip to content', outline: 'solid' });
      await owner.keyboard.press('Enter');
      expect(await owner.evaluate<string>('document.activeElement.id')).toBe('main');
      // From main, the next Tab stops are the form's: its name field first, announced by its label.
      await owner.keyboard.press('Tab');
      expect(await owner.evaluate<string>('document.activeElement.labels[0].textContent')).toBe('Name');
      expect((await focused()).outline).toBe('solid');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "fits a phone's width on every area: nothing overflows sideways",
    async () => {
      const phone = await newPage(browser, { viewport: { width: 360, height: 780 }, storageState: await owner.context().storageState() });
      const overflowing: string[] = [];
      for (const [area] of AREAS) {
        await phone.goto(`${h.api.url}/dashboard/${area}`);
        const wide = await phone.evaluate<number>('document.documentElement.scrollWidth');
        if (wide > 360) {
          const culprits = await phone.evaluate<string[]>(
            `[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > 360).slice(0, 5).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`,
          );
          overflowing.push(`${area}: ${wide}px (${culprits.join('; ')})`);
        }
      }
      await phone.goto(`${h.api.url}/dashboard/webhooks/new`);
      await screenshot(phone, 'dashboard-webhook-form-phone');
      await phone.close();
      expect(overflowing).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
