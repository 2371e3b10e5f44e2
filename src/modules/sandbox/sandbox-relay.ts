import { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { LRUCache } from 'lru-cache';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { createInboundIntake } from '../inbound/intake.ts';
import { composeMessage, type Envelope } from '../outbound/message-composer.ts';
import { createRelay, type Relay, type RelayRecipientResult } from '../outbound/relay.ts';
import { buildArfReport } from './arf-report.ts';
import { rcptReply, REJECT_REPLY, SIMULATOR_DOMAIN, simulatedMailbox, softBounceKey } from './mailbox-simulator.ts';

/** A complaint report quotes the original's headers only: far below this. */
const REPORT_MAX_BYTES = 2 * 1024 * 1024;

/** How long after accepting a complaint@ message its ARF report comes back (after the delivery is recorded). */
export const SANDBOX_COMPLAINT_DELAY_MS = 1_000;

export interface SandboxRelayDeps {
  logger: Logger;
  /**
   * Hands a report message to Herald's own inbound pipeline, as if it had arrived over SMTP
   * (the worker wires the inbound intake). The ARF report of a complaint@ recipient goes there,
   * to the message's signed return path, and is applied like any real report.
   */
  receiveReport: (raw: Buffer, envelope: Envelope) => Promise<void>;
  simulatorDomain?: string;
  /** Soft bounces per (return path, recipient) before softbounce@ accepts. */
  softBounceAttempts?: number;
  complaintDelayMs?: number;
}

/**
 * The sandbox relay: where the messages of test keys end. It composes each message as a relay
 * would receive it (the whole pipeline runs: building, DKIM signing, composing), answers every
 * recipient as the mailbox simulator says (docs/mail-sink.md: `bounce@` 550 5.1.1,
 * `softbounce@` 451 then accepted, `suppressed@` 550, `reject@` refuses the message, and every
 * other address, at the simulator domain or anywhere else, is accepted as delivered), and for a
 * `complaint@` recipient sends an ARF report back through Herald's inbound pipeline. Nothing
 * leaves the process: no connection is opened.
 */
export function createSandboxRelay(deps: SandboxRelayDeps): Relay & { settle(): Promise<void> } {
  const simulatorDomain = deps.simulatorDomain ?? SIMULATOR_DOMAIN;
  const softBounceAttempts = deps.softBounceAttempts ?? 1;
  const softBounces = new LRUCache<string, number>({ max: 10_000 });
  const reports = new Set<Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();

  function scheduleComplaint(raw: Buffer, envelope: Envelope, complainant: string): void {
    if (!envelope.from) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const messageId = /^message-id:\s*<([^>\r\n]+)>/im.exec(raw.subarray(0, 64 * 1024).toString('latin1'))?.[1] ?? null;
      const report = buildArfReport({
        original: { raw, mailFrom: envelope.from, receivedAt: new Date().toISOString(), messageId },
        complainant,
        fromAddress: `feedback@${simulatorDomain}`,
      });
      const sent = deps
        .receiveReport(report, { from: '', to: [envelope.from] })
        .catch((error: unknown) => deps.logger.warn('sandbox: the complaint report could not be recorded', { complainant, error }))
        .finally(() => reports.delete(sent));
      reports.add(sent);
    }, deps.complaintDelayMs ?? SANDBOX_COMPLAINT_DELAY_MS);
    timers.add(timer);
  }

  return {
    async send(message: Mail.Options, envelope: Envelope) {
      const raw = Buffer.isBuffer(message.raw) ? message.raw : await composeMessage(message, envelope);
      if (envelope.to.some((rcpt) => simulatedMailbox(rcpt, simulatorDomain) === 'reject')) {
        return {
          kind: 'message_refused',
          permanent: true,
          code: REJECT_REPLY.code,
          response: `${REJECT_REPLY.code} ${REJECT_REPLY.message}`,
        };
      }
      const recipients: RelayRecipientResult[] = envelope.to.map((rcpt) => {
        const mailbox = simulatedMailbox(rcpt, simulatorDomain);
        const key = softBounceKey(envelope.from, rcpt);
        const { reply, countsSoftBounce } = rcptReply(mailbox, softBounces.get(key) ?? 0, softBounceAttempts);
        if (countsSoftBounce) softBounces.set(key, (softBounces.get(key) ?? 0) + 1);
        const accepted = reply.code < 400;
        if (accepted && mailbox === 'complaint') scheduleComplaint(raw, envelope, rcpt);
        const response = accepted ? '250 2.0.0 Ok: delivered to the sandbox (test key)' : `${reply.code} ${reply.message}`;
        return { email: rcpt.toLowerCase(), accepted, code: accepted ? 250 : reply.code, response };
      });
      return { kind: 'recipients', recipients, response: '250 2.0.0 Ok: delivered to the sandbox (test key)' };
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
    /** Resolves when every complaint report handed over so far is recorded (tests, shutdown). */
    async settle() {
      await Promise.all([...reports]);
    },
  };
}

/**
 * The sandbox relay a worker uses: SANDBOX_RELAY_URL when set (`herald dev` points it at its
 * own mail sink, which runs the same simulator, so test-key mail shows up in the sink's viewer),
 * else the in-process simulator above, whose complaint reports enter the inbound intake (the
 * inbound actor or its reconciler picks them up like mail that came over SMTP).
 */
export function createWorkerSandboxRelay(deps: {
  config: Pick<Config, 'sandboxRelay' | 'sends'>;
  orm: MikroORM;
  blobs: BlobStore | null;
  logger: Logger;
}): Relay {
  const { sandboxRelay } = deps.config;
  if (sandboxRelay) return createRelay({ url: sandboxRelay.url, poolSize: 2, tls: sandboxRelay.tls, logger: deps.logger });
  const intake = createInboundIntake({ orm: deps.orm, blobs: deps.blobs, maxBytes: REPORT_MAX_BYTES, logger: deps.logger });
  return createSandboxRelay({
    logger: deps.logger,
    async receiveReport(raw, envelope) {
      const result = await intake.receive(Readable.from([raw]), {
        mailFrom: envelope.from,
        rcptTo: envelope.to,
        remoteAddress: null,
        clientHostname: 'sandbox',
        heloName: 'sandbox',
        tls: false,
      });
      if (result.status !== 'accepted') throw new Error(`the inbound intake did not take the report (${result.status})`);
    },
  });
}
