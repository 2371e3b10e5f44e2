import { spawn } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { quantile } from './stats.ts';

const AUTOCANNON_CHILD = fileURLToPath(new URL('autocannon-child.ts', import.meta.url));

export interface HttpLoad {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Request body; with `uniqueIds`, each `[<id>]` (in the body and the headers) is a new id per request. */
  body?: string;
  uniqueIds?: boolean;
  connections: number;
  durationSec: number;
}

export interface LoadResult {
  /** Successful (2xx) requests per second. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx answers, socket errors and timeouts. */
  failures: number;
  total: number;
}

interface AutocannonJson {
  duration: number;
  latency: { p50: number; p99: number };
  requests: { total: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/**
 * HTTP load from a separate process: autocannon's API (keep-alive connections, HDR latency
 * histogram) in a child process. Throws when more than 0.5 % of the requests failed, since a rate of
 * errors is not a throughput.
 */
export async function runHttpLoad(load: HttpLoad): Promise<LoadResult> {
  const options = {
    url: load.url,
    method: load.method ?? 'GET',
    headers: load.headers ?? {},
    ...(load.body !== undefined ? { body: load.body } : {}),
    idReplacement: load.uniqueIds ?? false,
    connections: load.connections,
    duration: load.durationSec,
  };
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [AUTOCANNON_CHILD, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`autocannon exited with ${code}: ${stderr.trim()}`))));
  });
  const result = JSON.parse(output) as AutocannonJson;
  const failures = result.non2xx + result.errors + result.timeouts;
  const total = result.requests.total;
  if (failures > Math.max(1, total * 0.005)) {
    throw new Error(
      `${failures} of ${total} requests to ${options.method} ${load.url} failed (non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts})`,
    );
  }
  return { rps: result['2xx'] / result.duration, p50Ms: result.latency.p50, p99Ms: result.latency.p99, failures, total };
}

/**
 * The database-only baseline: `concurrency` callers issue `statement(i)` through one pg.Pool
 * of `poolMax` connections as fast as they can for `durationSec`.
 */
export async function runPgLoop(options: {
  databaseUrl: string;
  poolMax: number;
  concurrency: number;
  durationSec: number;
  /** With a `name`, pg prepares the statement once per pooled connection and then only binds and executes it. */
  statement: (i: number) => { name?: string; text: string; values: unknown[] };
}): Promise<LoadResult> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolMax });
  pool.on('error', () => {});
  try {
    await Promise.all(Array.from({ length: options.poolMax }, () => pool.query('select 1')));
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    const deadline = started + options.durationSec * 1000;
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (performance.now() < deadline) {
          const statement = options.statement(next++);
          const t0 = performance.now();
          await pool.query(statement);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      rps: latencies.length / elapsed,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      failures: 0,
      total: latencies.length,
    };
  } finally {
    await pool.end();
  }
}

/**
 * Latency of one request at a time for `durationSec` over one keep-alive connection, timed
 * with sub-millisecond resolution (autocannon's histogram counts whole milliseconds, too coarse
 * for pages answered in a few). Every answer must be 200.
 */
export async function sampleLatency(url: string, headers: Record<string, string>, durationSec: number): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET ${url} answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    const latencies: number[] = [];
    const started = performance.now();
    const deadline = started + durationSec * 1000;
    while (performance.now() < deadline) {
      const t0 = performance.now();
      await once();
      latencies.push(performance.now() - t0);
    }
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      rps: latencies.length / elapsed,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      failures: 0,
      total: latencies.length,
    };
  } finally {
    agent.destroy();
  }
}

/**
 * Open-loop latency: one GET every 1/rate seconds for `durationSec`, each on its own schedule
 * whether or not the previous one answered (a stalled server shows as queued, slow answers, as
 * a steady client would see it). Latencies in ms, sorted; every answer must be 200.
 */
export async function sampleAtRate(url: string, headers: Record<string, string>, rate: number, durationSec: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const req = httpRequest(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`GET ${url} answered ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
      req.end();
    });
  try {
    const count = Math.round(rate * durationSec);
    const started = performance.now();
    const pending: Promise<number>[] = [];
    for (let i = 0; i < count; i += 1) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(once());
    }
    return (await Promise.all(pending)).sort((a, b) => a - b);
  } finally {
    agent.destroy();
  }
}
