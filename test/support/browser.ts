import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { REPO_ROOT } from '../../src/dev/paths.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';

/** Screenshots of the dashboard's pages, kept with the docs. */
export const SCREENSHOT_DIR = join(REPO_ROOT, 'docs', 'screenshots');
export const DEFAULT_VIEWPORT = { width: 1280, height: 800 } as const;

/**
 * Headless Chromium at CHROMIUM_BIN (`npm test` resolves it, src/dev/chromium.ts). Without
 * it this throws: browser tests fail, they never skip. No sandbox, since tests may run as root
 * (Chromium refuses to otherwise); /tmp instead of a small container /dev/shm.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_BIN;
  if (!executablePath) {
    throw new Error(
      'CHROMIUM_BIN is not set: run the browser tests through `npm test` (it installs Chromium) or set CHROMIUM_BIN=/usr/bin/chromium',
    );
  }
  if (!existsSync(executablePath)) throw new Error(`CHROMIUM_BIN=${executablePath} does not exist`);
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/** A page in its own context (closing the page closes it), 1280×800 unless `options` say otherwise. */
export function newPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Page> {
  return browser.newPage({ viewport: DEFAULT_VIEWPORT, ...options });
}

/** Writes a full-page screenshot to docs/screenshots/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name))
    throw new Error(`screenshot name ${JSON.stringify(name)}: use lowercase letters, digits and dashes`);
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Invites `email` to the workspace as `role` (owner unless said) and accepts on `page` as a new
 * person would (name, password, "Join and sign in"), leaving the page signed in on API keys.
 */
export async function joinByInvitation(
  page: Page,
  at: { orm: MikroORM; apiUrl: string; orgId: string },
  person: { email: string; name: string; role?: 'owner' | 'member' },
): Promise<void> {
  const { token } = await createDashboardAuthService({ orm: at.orm }).invite({
    orgId: at.orgId,
    email: person.email,
    role: person.role ?? 'owner',
  });
  await page.goto(`${at.apiUrl}/dashboard/invite/${token}`);
  await page.getByLabel('Your name').fill(person.name);
  await page.getByLabel(/Password/).fill('a long enough passphrase');
  await page.getByRole('button', { name: 'Join and sign in' }).click();
  await page.waitForURL(/\/dashboard\/keys$/);
}
