import type { ApiKeyMode } from '../../db/entities/index.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { createOrgWithKey } from './factories.ts';
import { apiClient } from './http.ts';
import { createTestStack, type TestStack } from './stack.ts';

export interface ApiHarness {
  stack: TestStack;
  api: RunningApi;
  /** A workspace with an all-scopes key and a generous rate limit. */
  workspace: Awaited<ReturnType<typeof createOrgWithKey>>;
  request: ReturnType<typeof apiClient>;
  close(): Promise<void>;
}

/**
 * A per-file database, a running api process on a free port, and one workspace with a key: a
 * test key by default (its mail stays in the sandbox); `keyMode: 'live'` where a test needs the
 * mail to reach its relay.
 */
export async function startApiHarness(env: Record<string, string> = {}, options: { keyMode?: ApiKeyMode } = {}): Promise<ApiHarness> {
  const stack = await createTestStack(env);
  const api = await startApi(stack.config, createLogger('silent'));
  const workspace = await createOrgWithKey(stack.orm, {
    scopes: ['all'],
    rateLimitPerMinute: 100_000,
    burst: 10_000,
    mode: options.keyMode ?? 'test',
  });
  return {
    stack,
    api,
    workspace,
    request: apiClient(api.url, workspace.key),
    async close() {
      await api.close();
      await stack.close();
    },
  };
}

let idempotencyCounter = 0;
/** A fresh Idempotency-Key header. */
export function idem(): Record<string, string> {
  idempotencyCounter += 1;
  return { 'idempotency-key': `test-${process.pid}-${Date.now()}-${idempotencyCounter}` };
}
