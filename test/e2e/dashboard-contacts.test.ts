import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

/** How long the import workflow gets to finish on a loaded machine. */
const DEADLINE_MS = 60_000;

/**
 * Contacts, segments and suppressions as a person uses them, in headless Chromium against the
 * real api and a worker (the import runs as its Temporal workflow): import a CSV and watch its
 * page follow it to the end, build a dynamic segment and see its count change with its tags,
 * suppress an address and see the API refuse a send to it.
 */
describe('dashboard contacts, segments and suppressions in a browser', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let browser: Browser;
  let page: Page;
  let blobDir: string;
  let domain: string;
  const logger = createLogger('warn');

  beforeAll(async () => {
    installTemporalLogging(logger);
    blobDir = await mkdtemp(join(tmpdir(), 'herald-e2e-contacts-'));
    h = await startApiHarness({ BLOB_DIR: blobDir, SEND_HANDOFF_WAIT_MS: '0' });
    worker = await startWorker(h.stack.config, logger, { orm: h.stack.orm });
    domain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
    await setCredits(h.stack.orm, h.workspace.org.id, 1_000);
    browser = await launchBrowser();
    page = await newPage(browser);
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: h.workspace.org.id },
      { email: 'ada@example.com', name: 'Ada Lovelace' },
    );
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await worker?.shutdown();
    await h?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('imports a CSV file and follows the import to its end, with the error report of the skipped row', async () => {
    await page.goto(`${h.api.url}/dashboard/contacts`);
    expect(await page.getByText('No contacts yet.').count()).toBe(1);
    await page.getByRole('link', { name: 'Import CSV' }).click();
    const rows = [
      'email,first_name,last_name,tags',
      ...Array.from({ length: 40 }, (_, i) => `person${i}@example.com,Person,Number ${i},${i % 4 === 0 ? 'vip' : 'regular'}`),
      'not-an-address,Bad,Row,',
    ];
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(`${rows.join('\n')}\n`) });
    await page.getByRole('button', { name: 'Upload and import' }).click();
    await page.waitForURL(/\/dashboard\/contacts\/imports\/[a-f0-9]{24}$/);
    // The page reloads itself (Refresh header) until the import ends: no action of ours.
    await expect.poll(() => page.locator('.state').first().textContent(), { timeout: DEADLINE_MS, interval: 500 }).toBe('completed');
    expect(await page.locator('#import-progress').getAttribute('value')).toBe('1');
    expect(await page.locator('dl.facts').textContent()).toMatch(/Created\s*40/);
    expect(await page.getByRole('link', { name: 'Download the error report' }).count()).toBe(1);
    await screenshot(page, 'dashboard-contact-import');

    await page.getByRole('link', { name: 'See the contacts' }).click();
    await page.getByLabel(/Email or name/).fill('number 12');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.getByRole('row').count()).toBe(2);
    await page.goto(`${h.api.url}/dashboard/contacts`);
    await screenshot(page, 'dashboard-contacts');
    await page.getByRole('link', { name: 'person0@example.com' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('person0@example.com');
    await screenshot(page, 'dashboard-contact');
  });

  it('builds a dynamic segment whose count follows its tags before it is saved', async () => {
    await page.goto(`${h.api.url}/dashboard/segments`);
    await page.getByRole('link', { name: 'New segment' }).click();
    expect(await page.locator('#live-count strong').textContent()).toBe('40');
    await page.getByLabel('Name', { exact: true }).fill('VIPs');
    await page.getByLabel(/^Tags/).fill('vip');
    // Leaving the field recounts (the small script sends the form's count button).
    await page.getByLabel(/^Description/).focus();
    await expect.poll(() => page.locator('#live-count strong').textContent(), { timeout: DEADLINE_MS }).toBe('10');
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('VIPs');
    await screenshot(page, 'dashboard-segment-new');
    await page.getByRole('button', { name: 'Create segment' }).click();
    await page.waitForURL(/\/dashboard\/segments\/[a-f0-9]{24}$/);
    expect(await page.locator('#segment-count').textContent()).toBe('10');
    await screenshot(page, 'dashboard-segment');
    await page.goto(`${h.api.url}/dashboard/segments`);
    await screenshot(page, 'dashboard-segments');
  });

  it('suppresses an address, after which the API refuses a send to it', async () => {
    await page.goto(`${h.api.url}/dashboard/suppressions`);
    await page.getByLabel('Address', { exact: true }).last().fill('person3@example.com');
    await page.getByLabel(/^Why/).fill('asked to stop');
    await page.getByRole('button', { name: 'Suppress' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('person3@example.com is suppressed');
    await screenshot(page, 'dashboard-suppressions');
    const refused = await h.request('POST', '/api/v1/outbox/emails', {
      headers: idem(),
      body: { from: `shop@${domain}`, to: 'person3@example.com', subject: 'Hi', text: 'x' },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect((refused.body.error?.details as { reason?: string }).reason).toBe('RECIPIENT_SUPPRESSED');
    await page.getByRole('link', { name: 'Remove…' }).click();
    expect(await page.getByText('Sends to it will pass again').count()).toBe(1);
    await screenshot(page, 'dashboard-suppression-remove');
  });

  it("is usable at a phone's width: nothing overflows sideways on the new pages", async () => {
    const phone = await newPage(browser, { viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
    for (const path of [
      '/dashboard/contacts',
      '/dashboard/segments',
      '/dashboard/suppressions',
      '/dashboard/segments/new',
      '/dashboard/contacts/imports',
    ]) {
      await phone.goto(`${h.api.url}${path}`);
      const overflow = await phone.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await phone.goto(`${h.api.url}/dashboard/contacts`);
    await screenshot(phone, 'dashboard-contacts-phone');
    await phone.close();
  });
});
