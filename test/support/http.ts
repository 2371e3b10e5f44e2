import { expect } from 'vitest';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & {
    ok?: boolean;
    data?: unknown;
    meta?: Record<string, unknown>;
    error?: { code: string; message: string; docs_url: string; details?: Record<string, unknown> };
  };
}

/** A small client for a running Herald API; failing assertions print the response body. */
export function apiClient(baseUrl: string, key?: string) {
  return async function request(
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string>; key?: string | null } = {},
  ): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const bearer = options.key === undefined ? key : options.key;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (options.body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(baseUrl + path, {
      method,
      headers,
      ...(options.body !== undefined ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    let body: ApiResponse['body'];
    try {
      body = JSON.parse(text) as ApiResponse['body'];
    } catch {
      body = { raw: text };
    }
    return { status: response.status, headers: response.headers, body };
  };
}

/** Asserts the error envelope with a code and status, printing the body on failure. */
export function expectError(response: ApiResponse, status: number, code: string): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.ok, JSON.stringify(response.body)).toBe(false);
  expect(response.body.error?.code, JSON.stringify(response.body)).toBe(code);
  expect(typeof response.body.error?.message).toBe('string');
  expect(response.body.error?.docs_url).toBe(`http://herald.test/docs/api/errors/${code}`);
  expect(response.body.meta?.request_id).toEqual(expect.any(String));
}

/** One entry of `error.details.fields` (see src/validation.ts). */
export type FieldProblem = { path: string; type: string; location: string; message: string };

/** The per-field problems of a 400 answer. */
export const fieldsOf = (response: ApiResponse): FieldProblem[] => (response.body.error?.details as { fields: FieldProblem[] }).fields;
