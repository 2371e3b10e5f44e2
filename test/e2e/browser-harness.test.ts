import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage } from '../support/browser.ts';

const PAGE = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>Harness</title></head>
  <body>
    <p id="status">waiting</p>
    <button id="go" type="button">Go</button>
    <script>
      document.getElementById('go').addEventListener('click', () => {
        document.getElementById('status').textContent = 'clicked';
      });
    </script>
  </body>
</html>`;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('browser harness', () => {
  let server: Server;
  let baseUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('opens a page over loopback HTTP, runs its script on a click and screenshots it', async () => {
    const page = await newPage(browser);
    try {
      const response = await page.goto(`${baseUrl}/`);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('Harness');
      expect(await page.locator('#status').textContent()).toBe('waiting');

      await page.getByRole('button', { name: 'Go' }).click();
      await page.locator('#status', { hasText: 'clicked' }).waitFor({ timeout: 5_000 });
      expect(await page.locator('#status').textContent()).toBe('clicked');

      const shot = await page.screenshot();
      expect(shot.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
      // IHDR: the default 1280×800 viewport.
      expect([shot.readUInt32BE(16), shot.readUInt32BE(20)]).toEqual([1280, 800]);
    } finally {
      await page.close();
    }
  });

  it('fails clearly when CHROMIUM_BIN points nowhere', async () => {
    const saved = process.env.CHROMIUM_BIN;
    process.env.CHROMIUM_BIN = '/nonexistent/chromium';
    try {
      await expect(launchBrowser()).rejects.toThrow('CHROMIUM_BIN=/nonexistent/chromium does not exist');
    } finally {
      if (saved === undefined) delete process.env.CHROMIUM_BIN;
      else process.env.CHROMIUM_BIN = saved;
    }
  });
});
