/**
 * Page-load timing shared by the benchmarks held to the dashboard's 300 ms target (dashboard,
 * contact-search): a dashboard session of the workspace's owner, one GET at a time (the API's
 * paths with the key's bearer, the dashboard's with the session's cookie), each path's first load,
 * p50 and p95 over its share of the run, and the summary against the target.
 */
import { createOrm } from '../../db/orm.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';
import type { BenchContext } from './context.ts';
import { fmt, med, quantile } from './stats.ts';
import type { Stat, Summary } from './types.ts';

export const PAGE_TARGET_MS = 300;

/** A signed-in owner's session token for the workspace (an invitation accepted, as a person would). */
export async function dashboardSession(context: BenchContext, databaseUrl: string, orgId: string): Promise<string> {
  const orm = await createOrm({ databaseUrl, poolMax: 2 });
  context.defer(() => orm.close());
  const auth = createDashboardAuthService({ orm });
  const { token: invitation } = await auth.invite({ orgId, email: 'bench@example.com', role: 'owner' });
  const { token } = await auth.acceptInvite(invitation, { name: 'Bench', password: 'benchmark password' });
  return token;
}

/** One GET of `path` at `baseUrl`, read to the end; resolves with its wall time (ms), throws on anything but 200. */
export function pageLoader(baseUrl: string, credentials: { session: string; key?: string }): (path: string) => Promise<number> {
  return async (path) => {
    const headers: Record<string, string> =
      path.startsWith('/api/') && credentials.key
        ? { authorization: `Bearer ${credentials.key}` }
        : { cookie: `herald_session=${credentials.session}` };
    const begun = performance.now();
    const response = await fetch(`${baseUrl}${path}`, { headers, redirect: 'manual' });
    await response.text();
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
    return performance.now() - begun;
  };
}

/** The first load of each path, one at a time in order. */
export async function firstLoads(paths: readonly string[], load: (path: string) => Promise<number>): Promise<Map<string, number>> {
  const loads = new Map<string, number>();
  for (const path of paths) loads.set(path, await load(path));
  return loads;
}

export interface PageTiming {
  p50: number;
  p95: number;
  requests: number;
}

/** Each path loaded one request at a time for its share of `durationSec`; p50 and p95 per path. */
export async function timePages(
  paths: readonly string[],
  durationSec: number,
  load: (path: string) => Promise<number>,
): Promise<Map<string, PageTiming>> {
  const perPath = Math.max(1, durationSec / paths.length);
  const timings = new Map<string, PageTiming>();
  for (const path of paths) {
    const samples: number[] = [];
    const until = performance.now() + perPath * 1000;
    while (performance.now() < until) samples.push(await load(path));
    samples.sort((a, b) => a - b);
    timings.set(path, { p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), requests: samples.length });
  }
  return timings;
}

/** The summary of a run's slowest first load and p95 against PAGE_TARGET_MS; `what` says what was loaded. */
export function pageTargetSummary(name: string, what: string, stats: Record<string, Stat>): Summary {
  const first = med(stats, 'slowest_first_load_ms');
  const p95 = med(stats, 'slowest_p95_ms');
  return {
    name,
    figure: `${what}: first load ${fmt(first)} ms, p95 ${fmt(p95)} ms`,
    ratio: Math.max(first, p95) / PAGE_TARGET_MS,
    baseline: `the ${PAGE_TARGET_MS} ms target`,
    target: { text: `< ${PAGE_TARGET_MS} ms`, met: first < PAGE_TARGET_MS && p95 < PAGE_TARGET_MS },
  };
}
