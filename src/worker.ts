import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import type { Logger as TemporalLogger } from '@temporalio/common';
import { createActivities } from '../activities/index.ts';
import { createAutomationReconciler } from './modules/automations/automation-reconciler.ts';
import { createDateTriggerScan } from './modules/automations/automation-date-trigger.ts';
import { createOrm, type MikroORM } from '../db/orm.ts';
import { openBlobStore } from './blob/open-blob-store.ts';
import type { Config } from './config.ts';
import { createDnsResolver } from './dns/resolver.ts';
import { reportQueuesFrom } from './metrics/metrics.ts';
import { readQueueDepths } from './queue/queue-depth.repo.ts';
import type { Logger } from './logger.ts';
import { createInboundReconciler } from './modules/inbound/reconciler.ts';
import { composedElsewhere, maskRelayUrl, type Relay } from './modules/outbound/relay.ts';
import { createThreadedRelay } from './modules/outbound/relay-thread.ts';
import { createWorkerSandboxRelay } from './modules/sandbox/sandbox-relay.ts';
import { createOffloadPool, type OffloadPool } from './offload/offload-pool.ts';
import { createDirectRelay } from './modules/outbound/direct-relay.ts';
import { createDestinationShaper } from './modules/outbound/shaping/destination-shaper.ts';
import { createRedis } from './redis/client.ts';
import { checkEgressAddresses } from './modules/egress/bindable.ts';
import { createEgress } from './modules/egress/egress.ts';
import { egressAddresses } from './settings/egress-pools.ts';
import { createMtaSts } from './modules/outbound/mta-sts.ts';
import { readTrustedAuthorities } from './modules/outbound/relay-tls.ts';
import { describeRelayTls } from './smtp/tls-policy.ts';
import { applyInboundReport } from './modules/outbound/report-recorder.ts';
import { createSendReconciler } from './modules/outbound/send-reconciler.ts';
import { createTrackingCounter } from './modules/broadcasts/tracking-counter.ts';
import { createReputationLoop } from './modules/reputation/reputation-loop.ts';
import { createRetentionLoop } from './modules/retention/retention.ts';
import { createAutomationWaker } from './modules/automations/automation-wake.ts';
import { classifyInbound } from './modules/inbound/report-classifier.ts';
import { sendDomainActorContract } from '../workflows/send-domain.ts';
import { wakeActors } from './temporal/actor-wake.ts';
import { startLoops } from './queue/background-loop.ts';
import { startQueueWakes } from './queue/wakes.ts';
import { createWebhookFanOut } from './modules/webhooks/webhook-fan-out.ts';
import { createWebhookReconciler } from './modules/webhooks/webhook-reconciler.ts';
import { connectTemporalClient, temporalConnectError, type TemporalClientHandle } from './temporal/client.ts';
import { temporalConnectionOptions } from './temporal/connection-options.ts';
import { prepareTemporalNamespace } from './temporal/search-attribute-registry.ts';
import { ensureSchedules } from './temporal/schedules.ts';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
/** Where `herald bundle-workflows` writes the ahead-of-time bundle used in production. */
export const WORKFLOW_BUNDLE_PATH = fileURLToPath(new URL('../.build/workflow-bundle.js', import.meta.url));

/**
 * Share of the workflow-task pollers that poll the task queue itself rather than this worker's
 * sticky queue (the SDK's default is 0.2: 2 of 10 pollers). Chosen when every item was a
 * workflow of its own and nearly every task was a new run's first one, from the task queue
 * (docs/decisions.md, 2026-11-21); the actors' tasks mostly come from the sticky queue, and the
 * share has not been measured again since.
 */
const TASK_QUEUE_POLLER_SHARE = 0.8;
const MAX_CACHED_WORKFLOWS = 200;

/** Herald's logger in the Temporal SDK's shape: only warnings and errors pass. */
function temporalLogger(logger: Logger): TemporalLogger {
  const forward = (level: string, message: string, meta?: Record<string, unknown>) => {
    if (level === 'ERROR') logger.error(message, meta ?? {});
    else if (level === 'WARN') logger.warn(message, meta ?? {});
  };
  return {
    log: (level, message, meta) => forward(level, message, meta),
    trace: () => {},
    debug: () => {},
    info: () => {},
    warn: (message, meta) => forward('WARN', message, meta),
    error: (message, meta) => forward('ERROR', message, meta),
  };
}

/**
 * Routes the Temporal SDK's warnings and errors into Herald's log. The runtime exists once per
 * process: when it was already created, the existing one is kept.
 */
export function installTemporalLogging(logger: Logger): boolean {
  try {
    Runtime.install({ logger: temporalLogger(logger) });
    return true;
  } catch {
    return false;
  }
}

export interface RunningWorker {
  /** Resolves when the Temporal worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * A prebuilt bundle when there is one (HERALD_WORKFLOW_BUNDLE from `herald dev`, or the
 * ahead-of-time .build/ bundle in production), else one bundle built now for all queues
 * (webpack in this process: slower to start and a larger heap).
 */
async function workflowBundle(config: Config, logger: Logger): Promise<NonNullable<WorkerOptions['workflowBundle']>> {
  if (config.temporal.workflowBundlePath) return { codePath: config.temporal.workflowBundlePath };
  if (existsSync(WORKFLOW_BUNDLE_PATH)) return { codePath: WORKFLOW_BUNDLE_PATH };
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: temporalLogger(logger) });
  return { code };
}

/**
 * The heap of the thread that composes (and, with a relay, sends) messages: a message at a time
 * per task, nothing kept (V8's defaults for a thread let it grow by 140 MB under a broadcast's
 * steady allocation).
 */
const COMPOSER_HEAP = { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 };

/**
 * How this worker's messages leave: the pooled relay (SMTP_RELAY_URL) on a thread of its own
 * that also composes and signs them, or direct delivery to each recipient domain's MX
 * (SMTP_DELIVERY=direct) from this thread, with messages composed and signed on the offload thread.
 * Returns the factory: called without an address for the default route, with one for an egress
 * pool's address (every connection of that relay leaves from it).
 */
function outboundDelivery(config: Config, logger: Logger, offload: OffloadPool): (localAddress?: string) => Relay {
  if (config.delivery.mode === 'direct') {
    const { heloName, port, poolSize, ratePerMinute, shaping, tls, mtaSts, caFile, allowPrivateTargets } = config.delivery;
    logger.info('outbound delivery: direct to MX', {
      heloName,
      port,
      poolSize,
      ratePerMinute,
      destination: shaping,
      tls: tls.policy,
      mtaSts: mtaSts ? 'enforce' : 'off',
      allowPrivateTargets,
    });
    // Routes repeat in bursts (many messages to one domain): answers are reused for a minute.
    const dns = createDnsResolver(config, { cache: { ttlMs: 60_000, maxEntries: 10_000 } });
    // The public roots plus SMTP_DIRECT_CA_FILE's authorities; Node's own roots when unset.
    const ca = caFile ? readTrustedAuthorities(caFile, 'SMTP_DIRECT_CA_FILE') : undefined;
    const policies = mtaSts ? createMtaSts({ dns, logger, ...(ca ? { ca } : {}), port: mtaSts.port, allowPrivateTargets }) : null;
    // One shaper for every source address: a destination's limits hold whatever address the mail leaves from.
    const shaper = createDestinationShaper({ redis: createRedis(config, logger), settings: shaping, logger });
    return (localAddress) => {
      const direct = createDirectRelay({
        dns,
        heloName,
        port,
        poolSize,
        ratePerMinute,
        tls,
        ...(ca ? { ca } : {}),
        mtaSts: policies,
        allowPrivateTargets,
        shaper,
        logger,
        ...(localAddress ? { localAddress } : {}),
      });
      return composedElsewhere(direct, (message, envelope) => offload.composeMessage(message, envelope), logger);
    };
  }
  logger.info('outbound relay', { relay: maskRelayUrl(config.relayUrl), tls: describeRelayTls(config.relayTls), thread: true });
  // One relay thread per source address: its pooled connections all leave from that address.
  return (localAddress) =>
    createThreadedRelay({
      settings: {
        url: config.relayUrl,
        poolSize: config.sends.relayPoolSize,
        maxConnections: config.sends.relayMaxConnections,
        tls: config.relayTls,
        ...(localAddress ? { localAddress } : {}),
      },
      resourceLimits: COMPOSER_HEAP,
      logger,
    });
}

/**
 * The worker's two Temporal connections (a client for schedules and wake-ups, the worker's own),
 * opened once the namespace and Herald's search attributes are known to be in place
 * (TEMPORAL_SEARCH_ATTRIBUTES); on any failure nothing is left open.
 */
async function connectWorkerToTemporal(
  config: Config,
  logger: Logger,
): Promise<{ temporal: TemporalClientHandle; connection: NativeConnection }> {
  const temporal = await connectTemporalClient(config);
  try {
    const registered = await prepareTemporalNamespace(temporal.client.connection, {
      namespace: config.temporal.namespace,
      mode: config.temporal.searchAttributes,
    });
    if (registered.length > 0) logger.info('search attributes registered', { namespace: config.temporal.namespace, registered });
    const connection = await NativeConnection.connect(temporalConnectionOptions(config.temporal)).catch((error: unknown) => {
      throw temporalConnectError(config.temporal, error);
    });
    return { temporal, connection };
  } catch (error) {
    await temporal.close();
    throw error;
  }
}

/**
 * The worker process: one Temporal worker on Herald's task queue, with one connection, one ORM,
 * one activity set and one LISTEN connection (src/queue/wakes.ts). Ensures Herald's schedules
 * exist before polling, then starts its background loops (one list, stopped in reverse order).
 */
export async function startWorker(config: Config, logger: Logger, shared: { orm?: MikroORM } = {}): Promise<RunningWorker> {
  // An egress address this host does not have fails here, once, rather than in every delivery.
  await checkEgressAddresses(egressAddresses(config.egress));
  const orm = shared.orm ?? (await createOrm({ databaseUrl: config.database.url, poolMax: config.database.poolMax }));
  const { temporal, connection } = await connectWorkerToTemporal(config, logger).catch(async (error: unknown) => {
    if (!shared.orm) await orm.close();
    throw error;
  });
  // Composes and DKIM-signs outgoing messages off the event loop (direct delivery; a relay has its own thread).
  const offload = createOffloadPool({ resourceLimits: COMPOSER_HEAP });
  // One pooled SMTP transport to the relay per worker process (and one per egress source address).
  const relayFrom = outboundDelivery(config, logger, offload);
  const smtpRelay = relayFrom();
  const egress = createEgress({ orm, settings: config.egress, relayFrom: (address) => relayFrom(address) });
  // One client on the workers' connection for the loops and activities that wake actors.
  const client = new Client({ connection, namespace: config.temporal.namespace });
  // The process's one LISTEN connection: drains' wake-ups and the webhook fan-out's.
  const queueWakes = startQueueWakes({ databaseUrl: config.database.url, logger });
  const blobs = await openBlobStore(config, logger, 'worker');
  // Where test keys' mail ends (never the relay above): src/modules/sandbox/.
  const sandboxRelay = createWorkerSandboxRelay({ config, orm, blobs, logger });
  // Wakes, after their commit, the automations that imports, replies and first opens or clicks gave runs or events.
  const wakeAutomations = createAutomationWaker({ client, config, logger });
  const activities = createActivities({
    queueWakes,
    wakeAutomations,
    wakeDomainActors: (domains) => wakeActors(client, config, sendDomainActorContract, domains),
    orm,
    relay: smtpRelay,
    sandboxRelay,
    egress,
    dns: createDnsResolver(config),
    config,
    blobs,
    logger,
    reports: { classify: classifyInbound, apply: applyInboundReport },
  });
  const bundle = await workflowBundle(config, logger);
  const taskQueue = config.temporal.taskQueue;
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    activities,
    workflowBundle: bundle,
    shutdownGraceTime: '10s',
    nonStickyToStickyPollRatio: TASK_QUEUE_POLLER_SHARE,
    // Long-lived actors and short runs: a few hundred cached runs is plenty (the SDK's default
    // sizes the cache from the heap limit, thousands).
    maxCachedWorkflows: MAX_CACHED_WORKFLOWS,
  });
  // This process reports the queues' depth and oldest due age at /metrics.
  reportQueuesFrom(() => readQueueDepths(orm.em));
  const schedules = await ensureSchedules(temporal.client, config);
  if (schedules.created.length > 0) logger.info('schedules created', schedules);
  logger.info('worker polling', { taskQueue, namespace: config.temporal.namespace });
  const running = worker.run();
  const loops = startLoops(
    [
      // Fans committed events out to webhook delivery rows and wakes the endpoints' actors.
      createWebhookFanOut({ orm, temporal: client, config }),
      // Wakes the actors of endpoints whose due deliveries got no wake-up.
      createWebhookReconciler({ orm, temporal: client, config, logger }),
      // Wakes the inbound actor when raw messages the smtp process recorded got no wake-up.
      createInboundReconciler({ orm, temporal: client, config, logger }),
      // Wakes the actors of sending domains whose due emails got no wake-up.
      createSendReconciler({ orm, temporal: client, config, logger }),
      // Wakes the actors of active automations whose due runs got no wake-up (or whose wait ended with no timer).
      createAutomationReconciler({ orm, temporal: client, config, logger }),
      // Enrols contacts whose date trigger (birthday, anniversary, renewal) fires today in each automation's time zone.
      createDateTriggerScan({ orm, wakeAutomations }),
      // Judges broadcast open and click hits (bursts flagged, first open and click counted, their automation triggers fired).
      createTrackingCounter({ orm, wakeAutomations }),
      // Steps warming domains through their plan each UTC day and pauses workspaces past their reputation policy.
      createReputationLoop({ orm }),
      // Deletes settled records past their retention period (RETENTION_*_DAYS), in short batches.
      createRetentionLoop({ orm, blobs, policy: config.retention, logger }),
    ],
    { logger, wakes: queueWakes },
  );

  const done = running
    .finally(() => loops.stop())
    .then(async () => {
      reportQueuesFrom(null);
      smtpRelay.close();
      egress.close();
      sandboxRelay.close();
      blobs?.close();
      await offload.close();
      await queueWakes.stop();
      await temporal.close();
      await connection.close();
      if (!shared.orm) await orm.close();
    });
  return {
    done,
    async shutdown() {
      await loops.stop();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
