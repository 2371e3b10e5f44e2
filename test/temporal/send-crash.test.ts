import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import type { Service } from '../../src/dev/processes.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { idem } from '../support/api.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';

/**
 * A relay standing in for the provider: it holds its answer to the first RCPT of
 * `hang@example.com` until released, and counts the messages it accepted per Message-ID.
 */
async function startHoldingRelay(host = '127.0.0.1', port = 0) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  let heldNotify: () => void = () => {};
  const holding = new Promise<void>((resolve) => (heldNotify = resolve));
  const accepted: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    hideSTARTTLS: true,
    disableReverseLookup: true,
    closeTimeout: 500,
    onRcptTo(address, _session, callback) {
      if (address.address === 'hang@example.com' && !held) {
        held = true;
        heldNotify();
        void released.then(() => callback());
        return;
      }
      callback();
    },
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const id = /^message-id:\s*<([^>]+)>/im.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? '';
        accepted.push(id);
        callback(null, 'queued');
      });
    },
  });
  // The killed worker's connection ends with ECONNRESET: expected here, not a failure.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    holding,
    release,
    accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Through the relay, and with direct delivery (SMTP_DELIVERY=direct: example.com's MX, found
 * through a DNS server on loopback, is the holding server on 127.0.0.2).
 */
describe.each(['relay', 'direct'] as const)('a transactional send when the worker process is killed mid-send (%s delivery)', (mode) => {
  let relay: Awaited<ReturnType<typeof startHoldingRelay>>;
  let dns: TestDnsServer | null = null;
  let stack: TestStack;
  let api: RunningApi;
  let worker: Service | null = null;

  beforeAll(async () => {
    if (mode === 'relay') {
      relay = await startHoldingRelay();
      stack = await createTestStack({ SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`, SEND_HANDOFF_WAIT_MS: '0' });
    } else {
      relay = await startHoldingRelay('127.0.0.2', await freePort());
      dns = await startDnsServer({
        'example.com': { MX: [{ exchange: 'mx.example.com', priority: 10 }] },
        'mx.example.com': { A: ['127.0.0.2'] },
      });
      stack = await createTestStack({
        SMTP_DELIVERY: 'direct',
        SMTP_DIRECT_PORT: String(relay.port),
        SMTP_HELO_NAME: 'mta.herald.test',
        DNS_SERVERS: dns.address,
        SEND_HANDOFF_WAIT_MS: '0',
      });
    }
    api = await startApi(stack.config, createLogger('silent'));
  });

  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await stack?.close();
    await relay?.close();
    await dns?.close();
  });

  it('loses nothing and hands the message to the relay exactly once', async () => {
    const { org, key } = await createOrgWithKey(stack.orm, { mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    await setCredits(stack.orm, org.id, 10);
    const request = apiClient(api.url, key);
    worker = await spawnWorkerProcess(stack);

    const response = await request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain.domain}`, to: 'hang@example.com', subject: 'Crash test', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const email = response.body.data as { _id: string; message_id: string };

    // The worker is in the middle of the SMTP conversation: kill it there.
    await relay.holding;
    worker.child.kill('SIGKILL');
    await worker.exited;
    relay.release();
    expect(relay.accepted).toEqual([]);

    worker = await spawnWorkerProcess(stack);
    const deadline = Date.now() + 60_000;
    let status = '';
    while (Date.now() < deadline) {
      const read = await request('GET', `/api/v1/outbox/emails/${email._id}`);
      status = (read.body.data as { status: string }).status;
      if (status === 'sent') break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(status).toBe('sent');
    expect(relay.accepted).toEqual([email.message_id]);
  }, 120_000);
});
