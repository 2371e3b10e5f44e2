import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { apiClient, expectError } from '../support/http.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

describe('GET /docs/api/errors/:code', () => {
  let stack: TestStack;
  let api: RunningApi;

  beforeAll(async () => {
    stack = await createTestStack();
    api = await startApi(stack.config, createLogger('silent'));
  });
  afterAll(async () => {
    await api.close();
    await stack.close();
  });

  it.each(ERROR_CODES)('serves a page for %s', async (code) => {
    const response = await fetch(`${api.url}/docs/api/errors/${code}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    const html = await response.text();
    expect(html).toContain(`<code>${code}</code>`);
    expect(html).toMatch(/What it means[\s\S]+Common causes[\s\S]+What to do/);
  });

  it('lists every code on the index and links the index from /docs', async () => {
    const index = await (await fetch(`${api.url}/docs/api/errors`)).text();
    for (const code of ERROR_CODES) expect(index).toContain(`/docs/api/errors/${code}`);
    expect(await (await fetch(`${api.url}/docs`)).text()).toContain('/docs/api/errors');
    expect((await fetch(`${api.url}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
  });

  it('answers 404 in the envelope for an unknown code', async () => {
    expectError(await apiClient(api.url)('GET', '/docs/api/errors/no_such_code'), 404, 'not_found');
  });

  it('every docs_url an error carries resolves on this server', async () => {
    const response = await apiClient(api.url)('GET', '/api/v1/me');
    const docsUrl = new URL(response.body.error!.docs_url);
    expect((await fetch(api.url + docsUrl.pathname)).status).toBe(200);
  });
});
