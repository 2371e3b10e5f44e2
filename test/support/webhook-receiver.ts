import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '../../src/dev/processes.ts';

/** One request as the receiver got it: the raw body, exactly as signed. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request arrived. */
  at: number;
  /** Date.now() when the request arrived. */
  receivedAt: number;
}

export type Reply = { status?: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';
/** Decides the answer to the `index`-th (0-based) request on a path. */
export type Responder = (request: ReceivedRequest, index: number) => Reply;

export interface WebhookReceiver {
  /** `http://<host>:<port><path>`; host defaults to 127.0.0.1. */
  url(path: string, host?: string): string;
  port: number;
  /** Requests so far, optionally only those on `path`. */
  requests(path?: string): ReceivedRequest[];
  respond(path: string, responder: Responder): void;
  waitForRequests(path: string, count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Answers every request still hanging with `status`. */
  releaseHanging(status?: number): void;
  close(): Promise<void>;
}

/**
 * A real HTTP receiver on 127.0.0.1 for webhook tests: records every request with its raw
 * body and answers per path (200 "ok" unless told otherwise; 'hang' never answers).
 */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedRequest[] = [];
  const responders = new Map<string, Responder>();
  const hanging = new Set<ServerResponse>();
  /** Requests so far per path: the responder's index without scanning every request received. */
  const countByPath = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
        receivedAt: Date.now(),
      };
      const index = countByPath.get(path) ?? 0;
      countByPath.set(path, index + 1);
      received.push(request);
      const responder: Responder = responders.get(path) ?? (() => ({}));
      const reply = responder(request, index);
      if (reply === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const send = () => {
        res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? 'ok');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path, host = '127.0.0.1') => `http://${host}:${port}${path}`,
    requests: (path) => (path === undefined ? [...received] : received.filter((r) => r.path === path)),
    respond: (path, responder) => void responders.set(path, responder),
    waitForRequests: (path, count, timeoutMs = 30_000) =>
      waitFor(
        `${count} request(s) on ${path}`,
        () => {
          const found = received.filter((r) => r.path === path);
          return Promise.resolve(found.length >= count ? found : undefined);
        },
        timeoutMs,
        25,
      ),
    releaseHanging: (status = 503) => {
      for (const res of hanging) {
        res.writeHead(status);
        res.end();
      }
      hanging.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
