import type { MikroORM } from '@mikro-orm/postgresql';
import { InboundMessage } from '../../../db/entities/index.ts';
import { readBlob, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import type { DmarcIntake } from '../dmarc/dmarc-intake.ts';
import type { VerpSigner } from '../outbound/verp.ts';
import type { DNSResolver } from 'mailauth';
import { checkAuthentication } from './auth-results.ts';
import { countIngestAttempt } from './inbound-queue.repo.ts';
import { parseMessageStream, scanSubject, type ParsedMessage } from './mime.ts';
import { recordForWorkspace } from './record-inbox-message.ts';
import { CLASSIFY_MAX_BYTES, type InboundReportHooks, type InboundReportLike } from './reports-hook.ts';
import { routeRecipients } from './routing.ts';

export type RecordOutcome =
  | { status: 'recorded'; orgIds: string[]; messageIds: string[]; attachmentsPending: boolean }
  /** The raw message is already ingested or failed: nothing to do. */
  | { status: 'settled' }
  | { status: 'missing' }
  /** No workspace owns any recipient any more (a domain removed since RCPT, an unknown VERP id). */
  | { status: 'unroutable' };

/** What recording a raw message needs, built once by createInboundIngestion. */
export interface RecordMessagesDeps {
  orm: MikroORM;
  config: Pick<Config, 'bounceDomain'>;
  reports?: InboundReportHooks | undefined;
  logger?: Logger | undefined;
  wakeAutomations?: AutomationWaker | undefined;
  /** The blob store; throws when none is configured. */
  blobStore: () => BlobStore;
  resolver: DNSResolver;
  verp: VerpSigner | null;
  dmarc: DmarcIntake;
  /** This host's name in Authentication-Results. */
  mta: string;
}

/** Bytes of the raw message read for the fallback subject when the MIME parse fails early. */
const HEAD_BYTES = 64 * 1024;

async function readHead(blobs: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  const stream = await blobs.get(key);
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length >= HEAD_BYTES) break;
  }
  stream.destroy();
  return Buffer.concat(chunks).subarray(0, HEAD_BYTES);
}

async function parse(deps: RecordMessagesDeps, inbound: InboundMessage): Promise<ParsedMessage> {
  const blobs = deps.blobStore();
  const parsed = await parseMessageStream(await blobs.get(inbound.blobKey));
  if (parsed.htmlTooLong) {
    // An html-only body too large to convert: keep the html (capped), without a text version.
    const again = await parseMessageStream(await blobs.get(inbound.blobKey), undefined, { htmlOnly: true });
    parsed.html = again.html;
    parsed.text = again.text;
  }
  if (parsed.textTruncated) deps.logger?.info('inbound: text body cut to the inbox limit', { inboundId: inbound.id });
  if (parsed.parseError) {
    deps.logger?.warn('inbound: MIME parse stopped early; keeping what was read', { inboundId: inbound.id, error: parsed.parseError });
    if (!parsed.subject) parsed.subject = scanSubject(await readHead(blobs, inbound.blobKey));
  }
  return parsed;
}

async function classify(deps: RecordMessagesDeps, inbound: InboundMessage): Promise<InboundReportLike | null> {
  const { reports } = deps;
  if (!reports || inbound.sizeBytes > CLASSIFY_MAX_BYTES) return null;
  try {
    const raw = await readBlob(deps.blobStore(), inbound.blobKey);
    return await reports.classify({ raw, mailFrom: inbound.mailFrom, rcptTo: inbound.rcptTo, bounceDomain: deps.config.bounceDomain });
  } catch (error) {
    deps.logger?.warn('inbound: classification failed; recorded as a message', { inboundId: inbound.id, error });
    return null;
  }
}

/**
 * Parses the raw message (attachments only measured), checks its authentication, classifies
 * it, routes it and records one inbox message per workspace reached, each `pending` until
 * its attachments are stored (`ready` at once without attachments). `final`: the last
 * attempt, which records the message even if applying its report fails.
 */
export async function recordMessages(
  deps: RecordMessagesDeps,
  inboundId: string,
  options: { final?: boolean } = {},
): Promise<RecordOutcome> {
  const em = deps.orm.em.fork();
  const inbound = await em.findOne(InboundMessage, { id: inboundId });
  if (!inbound) return { status: 'missing' };
  if (inbound.status !== 'received') return { status: 'settled' };
  await countIngestAttempt(em, inboundId);
  const report = await classify(deps, inbound);
  const routed = await routeRecipients(em, inbound.rcptTo, deps.config.bounceDomain, deps.verp);
  if (routed.length === 0) return { status: 'unroutable' };
  // DMARC reports to a report address are stored as reports, not inbox messages.
  const reported = await deps.dmarc.ingest({
    id: inbound.id,
    rcptTo: inbound.rcptTo,
    readRaw: () => readBlob(deps.blobStore(), inbound.blobKey),
  });
  const routes = routed.filter((route) => route.emailId !== null || !reported.has(route.orgId));
  if (routes.length === 0) return { status: 'recorded', orgIds: [...reported], messageIds: [], attachmentsPending: false };
  const [parsed, auth] = await Promise.all([
    parse(deps, inbound),
    deps
      .blobStore()
      .get(inbound.blobKey)
      .then((raw) =>
        checkAuthentication({
          raw,
          mailFrom: inbound.mailFrom,
          remoteAddress: inbound.remoteAddress ?? null,
          heloName: inbound.heloName ?? null,
          mta: deps.mta,
          resolver: deps.resolver,
        }),
      ),
  ]);
  const messageIds: string[] = [];
  for (const route of routes) messageIds.push(await recordForWorkspace(deps, inbound, route, parsed, auth, report, options.final ?? false));
  return {
    status: 'recorded',
    orgIds: routes.map((route) => route.orgId),
    messageIds,
    attachmentsPending: parsed.attachments.length > 0,
  };
}
