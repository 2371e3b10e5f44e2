import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { apiClient } from '../support/http.ts';

/** The dashboard as a person uses it, in headless Chromium against the real api. */
describe('dashboard in a browser', () => {
  let h: ApiHarness;
  let browser: Browser;
  let page: Page;
  const password = 'a long enough passphrase';

  beforeAll(async () => {
    h = await startApiHarness();
    browser = await launchBrowser();
    page = await newPage(browser);
  });
  afterAll(async () => {
    await browser?.close();
    await h.close();
  });

  it('joins by invitation, signs out and in again', async () => {
    const { token } = await createDashboardAuthService({ orm: h.stack.orm }).invite({
      orgId: h.workspace.org.id,
      email: 'grace@example.com',
      role: 'owner',
    });
    await page.goto(`${h.api.url}/dashboard/invite/${token}`);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain('Join');
    await page.getByLabel('Your name').fill('Grace Hopper');
    await page.getByLabel(/Password/).fill(password);
    await page.getByRole('button', { name: 'Join and sign in' }).click();
    await page.waitForURL(/\/dashboard\/keys$/);
    expect(await page.getByText('Grace Hopper').count()).toBeGreaterThan(0);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/dashboard\/sign-in$/);
    await screenshot(page, 'dashboard-sign-in');
    await page.getByLabel('Email').fill('grace@example.com');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('Wrong email or password');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/dashboard\/keys$/);
  });

  it('creates a key with chosen scopes, copies its secret, uses it with the API, and revokes it', async () => {
    await page.goto(`${h.api.url}/dashboard/keys`);
    await page.getByLabel('Name', { exact: true }).fill('Browser-made key');
    await page.getByRole('radio', { name: 'live' }).check();
    await page.getByRole('checkbox', { name: 'me:read' }).check();
    await page.getByRole('checkbox', { name: 'domains:read' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('#new-key').textContent())?.trim() ?? '';
    expect(secret).toMatch(/^hrld_live_/);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.api.url });
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Copied' }).count()).toBe(1);
    // Evaluated in the page (this project's TypeScript has no DOM types).
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
    await screenshot(page, 'dashboard-keys');

    const me = await apiClient(h.api.url, secret)('GET', '/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ scopes: ['me:read', 'domains:read'] });

    await page.goto(`${h.api.url}/dashboard/keys`);
    page.once('dialog', (dialog) => void dialog.accept());
    const row = page.getByRole('row').filter({ hasText: 'Browser-made key' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL(/\/dashboard\/keys$/);
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'Browser-made key' }).textContent()).toContain('revoked');
  });

  it("is usable at a phone's width: the key list becomes cards, nothing overflows sideways", async () => {
    const phone = await newPage(browser, { viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
    await phone.goto(`${h.api.url}/dashboard/keys`);
    const overflow = await phone.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(phone, 'dashboard-keys-phone');
    await phone.close();
  });
});
