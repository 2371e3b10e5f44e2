import { request as httpRequest } from 'node:http';
import type { ApiResponse } from './http.ts';

export interface RawRequest {
  method: string;
  /** Full URL of the running api. */
  url: string;
  headers: Record<string, string>;
  /** Sent as chunks without a Content-Length (chunked), or as one body with it. */
  body: Buffer | { chunks: Iterable<Buffer> };
}

/**
 * Sends exact bytes over node:http (fetch cannot send a body the server answers before reading
 * it all, nor invalid UTF-8 as text) and resolves with the answer. A write failing once the
 * server has answered (EPIPE) is expected for refused bodies; a close without an answer rejects.
 */
export function sendRaw(input: RawRequest): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const url = new URL(input.url);
    const headers = Buffer.isBuffer(input.body)
      ? { ...input.headers, 'content-length': String(input.body.length) }
      : { ...input.headers, 'transfer-encoding': 'chunked' };
    const req = httpRequest(
      { method: input.method, hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let body: ApiResponse['body'];
          try {
            body = JSON.parse(text) as ApiResponse['body'];
          } catch {
            body = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body });
        });
      },
    );
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', (error: NodeJS.ErrnoException) => (answered || error.code === 'EPIPE' ? undefined : reject(error)));
    req.on('close', () => (answered ? undefined : reject(new Error('the connection closed without an answer'))));
    if (Buffer.isBuffer(input.body)) {
      req.end(input.body);
      return;
    }
    const chunks = input.body.chunks[Symbol.iterator]();
    const pump = (): void => {
      for (let next = chunks.next(); !next.done; next = chunks.next()) {
        if (req.destroyed) return;
        if (!req.write(next.value)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}
