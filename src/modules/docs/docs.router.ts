import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Router from '@koa/router';
import { AppError, ERROR_CODES, ERROR_STATUS, isErrorCode } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import { ERROR_DOCS } from './error-catalog.ts';
import { eventsPageBody } from './events-page.ts';
import { escapeHtml as escape } from '../../html-escape.ts';


function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Herald API</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
code{background:#f2f2f4;padding:.1em .3em;border-radius:3px}a{color:#0b57d0}table{border-collapse:collapse}
td,th{padding:.25rem .75rem;border-bottom:1px solid #ddd;text-align:left}</style></head>
<body>${body}</body></html>`;
}

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const REFERENCE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald API reference</title><link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<style>.herald-intro{font:15px/1.5 system-ui,sans-serif;max-width:1460px;margin:1rem auto 0;padding:0 20px}</style></head>
<body><div class="herald-intro">Errors: <a href="/docs/api/errors">every error code, what it means and what to do</a> ·
Webhooks: <a href="/docs/events">every event type and its data</a> ·
OpenAPI document: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a></div>
<div id="reference"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#reference', deepLinking: true });</script>
</body></html>`;

/**
 * Human-readable API docs: the reference at /docs (Swagger UI, served from this server, no
 * CDN, rendering /api/v1/openapi.json), one page per error code (the errors' docs_url) and the
 * webhook event catalog at /docs/events.
 */
export function createDocsRouter(): Router<HeraldState> {
  const router = new Router<HeraldState>();

  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = REFERENCE_PAGE;
  });

  router.get('/docs/assets/:file', (ctx) => {
    const file = ctx.params.file ?? '';
    const type = ASSETS[file];
    if (!type) throw new AppError('not_found', `No asset ${file}.`);
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(join(SWAGGER_UI_DIR, file));
  });

  const eventsPage = page('Webhook events', eventsPageBody());
  router.get('/docs/events', (ctx) => {
    ctx.type = 'html';
    ctx.body = eventsPage;
  });

  router.get('/docs/api/errors', (ctx) => {
    const rows = ERROR_CODES.map(
      (code) => `<tr><td><a href="/docs/api/errors/${code}"><code>${code}</code></a></td><td>${ERROR_STATUS[code]}</td><td>${escape(ERROR_DOCS[code].meaning)}</td></tr>`,
    ).join('');
    ctx.type = 'html';
    ctx.body = page('Errors', `<h1>Errors</h1><table><tr><th>code</th><th>status</th><th>meaning</th></tr>${rows}</table>`);
  });

  router.get('/docs/api/errors/:code', (ctx) => {
    const code = ctx.params.code ?? '';
    if (!isErrorCode(code)) throw new AppError('not_found', `No error code "${code}".`);
    const doc = ERROR_DOCS[code];
    ctx.type = 'html';
    ctx.body = page(
      doc.title,
      `<p><a href="/docs/api/errors">All errors</a></p>
<h1><code>${code}</code> — ${escape(doc.title)}</h1>
<p>HTTP status ${code === 'webhook_signature_invalid' ? 'not tied to a response (it describes a delivery you received)' : ERROR_STATUS[code]}.</p>
<h2>What it means</h2><p>${escape(doc.meaning)}</p>
<h2>Common causes</h2><ul>${doc.causes.map((c) => `<li>${escape(c)}</li>`).join('')}</ul>
<h2>What to do</h2><p>${escape(doc.fix)}</p>`,
    );
  });

  return router;
}
