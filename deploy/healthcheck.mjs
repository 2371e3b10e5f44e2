#!/usr/bin/env node
// Container health check for Herald's processes (used by docker-compose.yml, copied into the
// image by the Dockerfile). The slim Node image has no curl or nc, so the checks are Node:
//
//   node deploy/healthcheck.mjs api      GET /healthz on the API port answers 2xx (liveness)
//   node deploy/healthcheck.mjs ready    GET /readyz answers 2xx (readiness: the database too)
//   node deploy/healthcheck.mjs smtp     the SMTP listener greets with 220
//   node deploy/healthcheck.mjs worker   Temporal lists this container's worker as a poller on
//                                        every Herald task queue (identity "<pid>@<hostname>")
//
// Settings come from src/config.ts, the one reader of the environment, so the check probes
// exactly the ports, Temporal address, namespace and task queues the process itself uses.
// Exit status 0 = healthy, 1 = unhealthy (with the reason on stderr), 2 = bad usage.
import { request } from 'node:http';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { setTimeout } from 'node:timers';
import { loadConfig } from '../src/config.ts';

const DEADLINE_MS = 8_000;
/**
 * Temporal keeps a poller in describeTaskQueue for minutes after its last poll; a healthy
 * worker polls again at least every long-poll timeout (about a minute).
 */
const MAX_POLL_AGE_MS = 120_000;

/** Age of a protobuf Timestamp ({ seconds: Long | number, nanos }); Infinity when absent. */
function ageMs(timestamp) {
  if (!timestamp || timestamp.seconds == null) return Number.POSITIVE_INFINITY;
  const seconds = typeof timestamp.seconds === 'object' ? timestamp.seconds.toNumber() : Number(timestamp.seconds);
  return Date.now() - (seconds * 1000 + Math.floor((timestamp.nanos ?? 0) / 1e6));
}

/** Docker runs the check inside the container: a wildcard listener is reached on loopback. */
function probeHost(host) {
  return host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
}

function checkHttp(config, path) {
  const url = new URL(path, `http://${probeHost(config.http.host)}:${config.http.port}`);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: DEADLINE_MS }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) resolve(`GET ${url.pathname} ${status}`);
      else reject(new Error(`GET ${url.pathname} answered ${status}`));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url.pathname} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

function checkSmtp(config) {
  const host = probeHost(config.smtp.host);
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port: config.smtp.port });
    let buffer = '';
    socket.setEncoding('utf8');
    socket.setTimeout(DEADLINE_MS, () => socket.destroy(new Error('no SMTP greeting in time')));
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffer += chunk;
      // A multi-line greeting ends with the line whose code is followed by a space.
      const lines = buffer.split('\r\n');
      const last = lines.slice(0, -1).find((line) => /^\d{3} /.test(line));
      if (!last) return;
      socket.end('QUIT\r\n');
      if (last.startsWith('220 ')) resolve(`SMTP greeting: ${last}`);
      else reject(new Error(`SMTP greeting was "${last}"`));
    });
  });
}

async function checkWorker(config) {
  const { Connection } = await import('@temporalio/client');
  const connection = await Connection.connect({
    address: config.temporal.address,
    connectTimeout: DEADLINE_MS,
  });
  try {
    const suffix = `@${hostname()}`;
    const missing = [];
    for (const name of [config.temporal.taskQueue]) {
      const response = await connection.workflowService.describeTaskQueue({
        namespace: config.temporal.namespace,
        taskQueue: { name, kind: 1 /* TASK_QUEUE_KIND_NORMAL */ },
        taskQueueType: 1 /* TASK_QUEUE_TYPE_WORKFLOW */,
      });
      const polling = (response.pollers ?? []).some(
        (poller) => (poller.identity ?? '').endsWith(suffix) && ageMs(poller.lastAccessTime) <= MAX_POLL_AGE_MS,
      );
      if (!polling) missing.push(name);
    }
    if (missing.length > 0) {
      throw new Error(
        `no poll from this container (${suffix}) in the last ${MAX_POLL_AGE_MS / 1000}s on ${missing.join(', ')}`,
      );
    }
    return `polling ${config.temporal.taskQueue}`;
  } finally {
    await connection.close();
  }
}

const CHECKS = {
  api: (config) => checkHttp(config, '/healthz'),
  ready: (config) => checkHttp(config, '/readyz'),
  smtp: checkSmtp,
  worker: checkWorker,
};

const target = process.argv[2];
const check = Object.hasOwn(CHECKS, target ?? '') ? CHECKS[target] : undefined;
if (!check) {
  process.stderr.write(`usage: healthcheck.mjs ${Object.keys(CHECKS).join('|')}\n`);
  process.exit(2);
}

setTimeout(() => {
  process.stderr.write(`${target}: unhealthy: no answer within ${DEADLINE_MS} ms\n`);
  process.exit(1);
}, DEADLINE_MS + 1_000).unref();

try {
  const detail = await check(loadConfig());
  process.stdout.write(`${target}: healthy: ${detail}\n`);
  process.exit(0);
} catch (error) {
  process.stderr.write(`${target}: unhealthy: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
