import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN_ENTRY } from '../../src/dev/paths.ts';
import { freePort } from '../../src/dev/ports.ts';
import { spawnService, waitFor, type Service } from '../../src/dev/processes.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/** The pids of the live children of `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(parent) === pid && state !== 'Z') children.push(Number(entry));
    } catch {
      // exited while listing
    }
  }
  return children;
}

/**
 * `herald api` with API_PROCESSES=2 as a real process: two api processes share the port, the
 * primary serves their metrics summed, replaces one killed with -9, and stops them all on SIGTERM.
 */
describe('herald api with API_PROCESSES=2', () => {
  let stack: TestStack;
  let service: Service;
  let key: string;
  let url = '';
  let metricsUrl = '';
  let listening = 0;

  beforeAll(async () => {
    stack = await createTestStack();
    key = (await createOrgWithKey(stack.orm)).key;
    const [port, metricsPort] = [await freePort(), await freePort()];
    service = spawnService({
      name: 'api-cluster',
      command: process.execPath,
      args: [MAIN_ENTRY, 'api'],
      env: { ...process.env, ...stack.env, PORT: String(port), METRICS_PORT: String(metricsPort), API_PROCESSES: '2', LOG_LEVEL: 'info' },
      onLine: (line) => {
        if (line.includes('"msg":"api listening"')) listening += 1;
        if (line.includes('"msg":"metrics listening"')) metricsUrl = /"url":"([^"]+)"/.exec(line)?.[1] ?? '';
      },
    });
    url = `http://127.0.0.1:${port}`;
    await waitFor('two api processes to listen', () => Promise.resolve(listening >= 2 && metricsUrl ? true : undefined), 60_000, 100);
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await stack?.close();
  });

  const get = (path: string) => fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${key}`, Connection: 'close' } });

  it('answers on the shared port from two processes and sums their metrics at the primary', async () => {
    expect(childrenOf(service.child.pid!)).toHaveLength(2);
    for (let i = 0; i < 20; i += 1) expect((await get('/api/v1/me')).status).toBe(200);
    const text = await (await fetch(metricsUrl)).text();
    const counted = [...text.matchAll(/^herald_http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/me"[^}]*\} (\d+)$/gm)].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
    expect(counted).toBe(20);
  });

  it('starts another api process when one dies, and keeps answering', async () => {
    const [victim] = childrenOf(service.child.pid!);
    process.kill(victim!, 'SIGKILL');
    await waitFor('a replacement api process', () => Promise.resolve(listening >= 3 ? true : undefined), 60_000, 100);
    const children = childrenOf(service.child.pid!);
    expect(children).toHaveLength(2);
    expect(children).not.toContain(victim);
    for (let i = 0; i < 10; i += 1) expect((await get('/api/v1/me')).status).toBe(200);
  });

  it('stops every api process gracefully on SIGTERM', async () => {
    const children = childrenOf(service.child.pid!);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    for (const pid of children) expect(() => process.kill(pid, 0)).toThrow();
  });
});
