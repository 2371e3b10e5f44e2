import { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { readBlob, type BlobStore } from '../../blob/blob-store.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import type { DmarcIntake } from '../dmarc/dmarc-intake.ts';
import type { VerpSigner } from '../outbound/verp.ts';
import type { DNSResolver } from 'mailauth';
import { checkAuthentication } from './auth-results.ts';
import { startIngestAttempt, type RawInbound } from './inbound-queue.repo.ts';
import { parseMessageStream, scanSubject, type ParsedMessage } from './mime.ts';
import { recordForWorkspace } from './record-inbox-message.ts';
import { CLASSIFY_MAX_BYTES, type InboundReportHooks, type InboundReportLike } from './reports-hook.ts';
import { routeRecipients } from './routing.ts';

export type RecordOutcome =
  /**
   * `ingested`: the raw message was marked ingested with its last inbox message (nothing was
   * pending); otherwise the caller stores the attachments when pending, then marks it.
   */
  | { status: 'recorded'; orgIds: string[]; messageIds: string[]; attachmentsPending: boolean; ingested: boolean }
  /** The raw message is already ingested or failed, or gone: nothing to do. */
  | { status: 'settled' }
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

/**
 * The raw bytes as an attempt reads them: a message up to CLASSIFY_MAX_BYTES is read from the
 * blob store once and every reader (classification, DMARC, MIME parse, authentication) gets
 * that buffer; a larger one is streamed from the store to each reader, never held whole.
 */
interface RawBytes {
  /** The whole message. */
  buffer(): Promise<Buffer>;
  stream(): Promise<Readable>;
}

function rawBytes(blobs: BlobStore, inbound: RawInbound): RawBytes {
  if (inbound.sizeBytes > CLASSIFY_MAX_BYTES)
    return { buffer: () => readBlob(blobs, inbound.blobKey), stream: () => blobs.get(inbound.blobKey) };
  let read: Promise<Buffer> | undefined;
  const buffer = () => (read ??= readBlob(blobs, inbound.blobKey));
  return { buffer, stream: async () => Readable.from([await buffer()]) };
}

async function readHead(raw: RawBytes): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  const stream = await raw.stream();
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length >= HEAD_BYTES) break;
  }
  stream.destroy();
  return Buffer.concat(chunks).subarray(0, HEAD_BYTES);
}

async function parse(deps: RecordMessagesDeps, inbound: RawInbound, raw: RawBytes): Promise<ParsedMessage> {
  const parsed = await parseMessageStream(await raw.stream());
  if (parsed.htmlTooLong) {
    // An html-only body too large to convert: keep the html (capped), without a text version.
    const again = await parseMessageStream(await raw.stream(), undefined, { htmlOnly: true });
    parsed.html = again.html;
    parsed.text = again.text;
  }
  if (parsed.textTruncated) deps.logger?.info('inbound: text body cut to the inbox limit', { inboundId: inbound.id });
  if (parsed.parseError) {
    deps.logger?.warn('inbound: MIME parse stopped early; keeping what was read', { inboundId: inbound.id, error: parsed.parseError });
    if (!parsed.subject) parsed.subject = scanSubject(await readHead(raw));
  }
  return parsed;
}

async function classify(deps: RecordMessagesDeps, inbound: RawInbound, raw: RawBytes): Promise<InboundReportLike | null> {
  const { reports } = deps;
  if (!reports || inbound.sizeBytes > CLASSIFY_MAX_BYTES) return null;
  try {
    return await reports.classify({
      raw: await raw.buffer(),
      mailFrom: inbound.mailFrom,
      rcptTo: inbound.rcptTo,
      bounceDomain: deps.config.bounceDomain,
    });
  } catch (error) {
    deps.logger?.warn('inbound: classification failed; recorded as a message', { inboundId: inbound.id, error });
    return null;
  }
}

/**
 * Parses the raw message (attachments only measured), checks its authentication, classifies
 * it, routes it and records one inbox message per workspace reached, each `pending` until
 * its attachments are stored (`ready` at once without attachments). `final`: the last
 * attempt, which records the message even if applying its report fails. `started`: the
 * attempt was started by the drain's claim (inbound-queue.repo.ts), which read the raw row.
 */
export async function recordMessages(
  deps: RecordMessagesDeps,
  inboundId: string,
  options: { final?: boolean; started?: RawInbound } = {},
): Promise<RecordOutcome> {
  const em = deps.orm.em.fork();
  const inbound = options.started ?? (await startIngestAttempt(em, inboundId));
  if (!inbound) return { status: 'settled' };
  const raw = rawBytes(deps.blobStore(), inbound);
  const report = await classify(deps, inbound, raw);
  const routed = await routeRecipients(em, inbound.rcptTo, deps.config.bounceDomain, deps.verp, inbound.receivingDomains);
  if (routed.routes.length === 0) return { status: 'unroutable' };
  // DMARC reports to a report address are stored as reports, not inbox messages.
  const reported = routed.toReportAddress
    ? await deps.dmarc.ingest({ id: inbound.id, rcptTo: inbound.rcptTo, readRaw: () => raw.buffer() })
    : new Set<string>();
  const routes = routed.routes.filter((route) => route.emailId !== null || !reported.has(route.orgId));
  if (routes.length === 0) return { status: 'recorded', orgIds: [...reported], messageIds: [], attachmentsPending: false, ingested: false };
  const [parsed, auth] = await Promise.all([
    parse(deps, inbound, raw),
    raw.stream().then((stream) =>
      checkAuthentication({
        raw: stream,
        mailFrom: inbound.mailFrom,
        remoteAddress: inbound.remoteAddress,
        heloName: inbound.heloName,
        mta: deps.mta,
        resolver: deps.resolver,
      }),
    ),
  ]);
  const attachmentsPending = parsed.attachments.length > 0;
  const messageIds: string[] = [];
  for (const [index, route] of routes.entries()) {
    // With nothing pending, the last workspace's transaction also settles the raw message.
    const settlesRaw = !attachmentsPending && index === routes.length - 1;
    messageIds.push(
      await recordForWorkspace(deps, inbound, route, { parsed, auth, report }, { final: options.final ?? false, settlesRaw }),
    );
  }
  return { status: 'recorded', orgIds: routes.map((route) => route.orgId), messageIds, attachmentsPending, ingested: !attachmentsPending };
}
