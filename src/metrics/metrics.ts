import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../logger.ts';
import type { QueueDepth } from '../queue/queue-depth.repo.ts';

/**
 * Herald's Prometheus metrics (prom-client), one registry per process, served at
 * `http://<METRICS_HOST>:<METRICS_PORT>/metrics` by every process (api, worker, smtp, all):
 *
 * - `herald_queue_depth{pipeline}` and `herald_queue_oldest_due_age_seconds{pipeline}`: open
 *   rows of the webhook and send queues and of inbound ingestion, and how long the oldest due
 *   one has waited (read from PostgreSQL at scrape time, by worker processes only);
 * - `herald_deliveries_total{pipeline,outcome}`: attempts by outcome (webhooks: delivered,
 *   failed, exhausted; sends: sent, deferred, failed, cancelled);
 * - `herald_delivery_latency_seconds{pipeline}`: from an item falling due (a delivery's creation
 *   or retry time, an email's acceptance) to its attempt's outcome;
 * - `herald_send_step_seconds{step}`: where a send attempt's time goes (claim, build, relay, record);
 * - `herald_http_request_duration_seconds{method,route,status}`: the api's answers by route;
 * - `herald_inbound_refused_recipients_total{reason}`: RCPT refused by the inbound MX
 *   (unknown_domain: no workspace has verified it; forged_return_path: a bounce address Herald
 *   did not sign);
 * - `herald_inbound_reports_total{kind,result}`: bounce, delay and complaint reports by what
 *   became of them (applied, or why not: see docs/bounces.md);
 * - `herald_retention_deleted_total{table}` and `herald_retention_batch_seconds{table}`: rows
 *   the retention loop deleted, and how long each of its transactions held its rows
 *   (docs/retention.md);
 * - Node's process metrics (`herald_process_*`, `herald_nodejs_*`).
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'herald_' });

export type { Pipeline } from '../queue/queue-depth.repo.ts';

export const deliveriesTotal = new Counter({
  name: 'herald_deliveries_total',
  help: 'Delivery attempts by pipeline and outcome.',
  labelNames: ['pipeline', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const deliveryLatency = new Histogram({
  name: 'herald_delivery_latency_seconds',
  help: 'From an item falling due (created, retry time, acceptance) to the outcome of its attempt.',
  labelNames: ['pipeline'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [metricsRegistry],
});

export const sendStepDuration = new Histogram({
  name: 'herald_send_step_seconds',
  help: "The steps of the domain drains' send attempts: claim (one statement per batch), build (the message's parts and signing key), relay (composing and DKIM-signing, on the offload thread when it can, and the SMTP transaction), record (the answer committed).",
  labelNames: ['step'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'herald_http_request_duration_seconds',
  help: 'API answers by method, route and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

export const inboundRefusedRecipients = new Counter({
  name: 'herald_inbound_refused_recipients_total',
  help: 'Recipients refused at RCPT by the inbound MX, by reason (unknown_domain, forged_return_path).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const inboundReportsTotal = new Counter({
  name: 'herald_inbound_reports_total',
  help: 'Delivery and complaint reports received, by kind and result (applied, or the reason they changed nothing).',
  labelNames: ['kind', 'result'] as const,
  registers: [metricsRegistry],
});

export const retentionDeleted = new Counter({
  name: 'herald_retention_deleted_total',
  help: 'Rows the retention loop deleted past their period, by table (dependent rows deleted with them not counted).',
  labelNames: ['table'] as const,
  registers: [metricsRegistry],
});

export const retentionBatchDuration = new Histogram({
  name: 'herald_retention_batch_seconds',
  help: 'Retention transactions by table: how long each held the rows it deleted (blob deletions included).',
  labelNames: ['table'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

let queueSource: (() => Promise<QueueDepth[]>) | null = null;
let reading: Promise<QueueDepth[]> | null = null;

/** Both queue gauges collect from one read: a scrape reads the queues once, not once per gauge. */
function readQueues(): Promise<QueueDepth[]> {
  if (!queueSource) return Promise.resolve([]);
  reading ??= queueSource().finally(() => {
    reading = null;
  });
  return reading;
}

/** A gauge per pipeline whose value is one column of the scrape's queue read. */
function queueGauge(name: string, help: string, column: 'depth' | 'oldest_due_s') {
  return new Gauge({
    name,
    help,
    labelNames: ['pipeline'] as const,
    registers: [metricsRegistry],
    async collect() {
      this.reset();
      for (const row of await readQueues()) this.set({ pipeline: row.pipeline }, row[column]);
    },
  });
}

const queueDepth = queueGauge(
  'herald_queue_depth',
  'Open items per pipeline queue (webhook deliveries, emails, inbound messages not yet ingested).',
  'depth',
);
const oldestDue = queueGauge(
  'herald_queue_oldest_due_age_seconds',
  'How long the oldest due item of each pipeline has waited (0 when none is due).',
  'oldest_due_s',
);
void queueDepth;
void oldestDue;

/** Worker processes report the queues (`read` runs at scrape time); null stops it. */
export function reportQueuesFrom(read: (() => Promise<QueueDepth[]>) | null): void {
  queueSource = read;
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** What a metrics server renders: this process's registry, or its cluster workers' summed. */
export interface MetricsSource {
  contentType: string;
  render(): Promise<string>;
}

const processMetrics: MetricsSource = { contentType: metricsRegistry.contentType, render: () => metricsRegistry.metrics() };

/**
 * In an api cluster's worker: answers the primary's requests for this process's metrics (the
 * primary serves them, summed over its workers, at METRICS_PORT).
 */
export function serveMetricsToClusterPrimary(): void {
  AggregatorRegistry.setRegistries([metricsRegistry]);
  void new AggregatorRegistry();
}

/** In an api cluster's primary: the metrics of every worker, summed (prom-client's cluster aggregation). */
export function clusterMetricsSource(): MetricsSource {
  const aggregator = new AggregatorRegistry();
  return { contentType: aggregator.contentType, render: () => aggregator.clusterMetrics() };
}

/** Serves `source` (this process's registry by default) at /metrics (anything else is 404). */
export async function startMetricsServer(
  options: { port: number; host: string },
  source: MetricsSource = processMetrics,
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    source
      .render()
      .then((text) => response.writeHead(200, { 'Content-Type': source.contentType }).end(text))
      .catch((error: unknown) => response.writeHead(500).end(error instanceof Error ? error.message : String(error)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Starts the metrics server of a process where metrics are auxiliary: a port already taken is
 * logged as a warning, never fatal. Returns its stop, or null when it did not start.
 */
export async function serveMetricsOrWarn(
  options: { port: number; host: string },
  logger: Logger,
  source: MetricsSource = processMetrics,
  fields: Record<string, unknown> = {},
): Promise<(() => Promise<void>) | null> {
  try {
    const metrics = await startMetricsServer(options, source);
    logger.info('metrics listening', { url: metrics.url, ...fields });
    return () => metrics.close();
  } catch (error) {
    logger.warn('metrics not served', { port: options.port, error: error instanceof Error ? error.message : String(error) });
    return null;
  }
}
