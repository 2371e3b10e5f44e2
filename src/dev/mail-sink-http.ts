import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.ts';
import type { SinkMessage } from './mail-sink-store.ts';
import type { SinkStore } from './mail-sink-store.ts';
import { escapeHtml } from '../html-escape.ts';

export interface SinkViewer {
  port: number;
  close(): Promise<void>;
}

/** A message as the viewer's JSON lists it: everything but the bytes, plus where they are. */
export function messageSummary(message: SinkMessage): Omit<SinkMessage, 'raw'> & { rawUrl: string } {
  const { raw: _raw, ...rest } = message;
  return { ...rest, rawUrl: `/messages/${message.id}.eml` };
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The viewer page: newest first, every value escaped. */
export function renderPage(messages: SinkMessage[]): string {
  const rows = [...messages]
    .reverse()
    .map((m) => {
      const href = `/messages/${encodeURIComponent(m.id)}.eml`;
      return [
        '<tr>',
        `<td>${escapeHtml(m.receivedAt)}</td>`,
        `<td>${escapeHtml(m.mailFrom || '<>')}</td>`,
        `<td>${m.rcptTo.map(escapeHtml).join('<br>')}</td>`,
        `<td>${m.subject === null ? '<i>(no subject)</i>' : escapeHtml(m.subject)}</td>`,
        `<td>${escapeHtml(formatSize(m.sizeBytes))}</td>`,
        `<td><a href="${escapeHtml(href)}">raw</a> <a href="${escapeHtml(href)}" download>download</a></td>`,
        '</tr>',
      ].join('');
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Herald mail sink</title>
<style>
body{font:14px system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}code{background:#f4f4f4;padding:0 .2rem}
</style></head><body>
<h1>Herald mail sink</h1>
<p>${messages.length} message${messages.length === 1 ? '' : 's'} received. Nothing sent here leaves this machine.
JSON: <a href="/messages">/messages</a>; clear with <code>DELETE /messages</code>. Reload to refresh.</p>
<table><thead><tr><th>Received</th><th>From (envelope)</th><th>To (envelope)</th><th>Subject</th><th>Size</th><th></th></tr></thead>
<tbody>
${rows || '<tr><td colspan="6"><i>no messages yet</i></td></tr>'}
</tbody></table>
</body></html>
`;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...extra });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, store: SinkStore): void {
  const path = new URL(req.url ?? '/', 'http://sink').pathname;
  const method = req.method ?? 'GET';
  const json = (status: number, value: unknown) => send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
  const raw = /^\/messages\/([a-f0-9]{24})\.eml$/.exec(path);

  if (path === '/' && (method === 'GET' || method === 'HEAD')) {
    send(res, 200, 'text/html; charset=utf-8', renderPage(store.all()));
  } else if (path === '/messages' && method === 'GET') {
    json(200, store.all().map(messageSummary));
  } else if (path === '/messages' && method === 'DELETE') {
    store.clear();
    res.writeHead(204).end();
  } else if (raw && method === 'GET') {
    const message = store.get(raw[1]!);
    if (!message) json(404, { error: 'message not found' });
    else send(res, 200, 'message/rfc822', message.raw, { 'content-disposition': `inline; filename="${message.id}.eml"` });
  } else if (path === '/' || path === '/messages' || raw) {
    json(405, { error: 'method not allowed' });
  } else {
    json(404, { error: 'not found' });
  }
}

/**
 * The sink's viewer: GET / (HTML list), GET /messages (JSON, without bytes),
 * GET /messages/:id.eml (the exact bytes as message/rfc822), DELETE /messages (clear).
 */
export async function startSinkViewer(input: { host: string; port: number; store: SinkStore; logger: Logger }): Promise<SinkViewer> {
  const { store, logger } = input;
  const server = createServer((req, res) => {
    try {
      handle(req, res, store);
    } catch (error) {
      logger.error('mail sink viewer: request failed', { error, url: req.url });
      if (!res.headersSent) send(res, 500, 'application/json; charset=utf-8', JSON.stringify({ error: 'internal error' }));
      else res.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(input.port, input.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
