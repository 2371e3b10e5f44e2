import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';

/**
 * The Streams page as a person uses it, in headless Chromium against the real api: reach it
 * from the navigation, see the empty state, create a stream with a budget, change the budget,
 * pick the stream for a broadcast draft, delete the stream after the confirmation.
 */
describe('dashboard message streams in a browser', () => {
  let h: ApiHarness;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    h = await startApiHarness();
    browser = await launchBrowser();
    page = await newPage(browser);
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: h.workspace.org.id },
      { email: 'grace@example.com', name: 'Grace Hopper' },
    );
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('creates, changes and deletes a custom stream, and offers it to a broadcast', async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Streams' }).click();
    await page.waitForURL(/\/dashboard\/streams$/);
    expect(await page.getByText('No custom streams yet.').count()).toBe(1);
    expect(await page.getByRole('row').filter({ hasText: 'transactional' }).count()).toBeGreaterThan(0);

    await page.getByLabel('Name', { exact: true }).fill('product-news');
    await page.getByLabel('Kind').selectOption('broadcast');
    await page.getByLabel('Daily budget (optional)').fill('2000');
    await page.getByLabel('Description (optional)').fill('Monthly product news');
    await page.getByRole('button', { name: 'Create stream' }).click();
    await page.waitForURL(/\/dashboard\/streams\?done=created$/);
    const row = page.getByRole('row').filter({ hasText: 'product-news' });
    expect(await row.textContent()).toMatch(/Monthly product news[\s\S]*0 of 2,000/);
    expect(await page.getByText('No custom streams yet.').count()).toBe(0);
    await screenshot(page, 'dashboard-streams');

    await row.getByRole('link', { name: 'product-news' }).click();
    await page.waitForURL(/\/dashboard\/streams\/product-news$/);
    await page.getByLabel('Daily budget', { exact: true }).fill('5000');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/\/dashboard\/streams\/product-news\?done=saved$/);
    expect(await page.locator('dl.facts').textContent()).toContain('0 of 5,000');
    expect((await createStreamsService({ orm: h.stack.orm }).getStream(h.workspace.org.id, 'product-news')).dailyCap).toBe(5000);

    await page.goto(`${h.api.url}/dashboard/broadcasts/new`);
    const picker = page.getByLabel('Message stream');
    expect(await picker.locator('option').allTextContents()).toEqual(['broadcast', 'product-news']);

    await page.goto(`${h.api.url}/dashboard/streams/product-news`);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete stream' }).click();
    await page.waitForURL(/\/dashboard\/streams\?done=deleted$/);
    expect(await page.getByText('No custom streams yet.').count()).toBe(1);
    expect((await createStreamsService({ orm: h.stack.orm }).listStreams(h.workspace.org.id)).map((s) => s.name)).toEqual([
      'transactional',
      'broadcast',
    ]);
  });
});
