import type { EntityManager } from '@mikro-orm/postgresql';
import type { InboxMessageKind } from '../../../db/entities/index.ts';
import type { InboundRoute } from './routing.ts';

/** What the bounce/complaint classifier (src/modules/inbound/report-classifier.ts) says a message is. */
export interface InboundReportLike {
  kind: InboxMessageKind;
}

/**
 * The ingestion's view of bounce and complaint handling: `classify` (pure, on the raw bytes of
 * messages up to CLASSIFY_MAX_BYTES) decides the message's kind; `apply` turns a bounce, delay
 * or complaint report into events, suppressions and contact statuses, in the transaction that
 * records the inbox message. Wired by the worker's composition root.
 */
export interface InboundReportHooks<R extends InboundReportLike = InboundReportLike> {
  classify(input: { raw: Buffer; mailFrom: string; rcptTo: string[]; bounceDomain: string }): Promise<R>;
  /**
   * Absent until the send pipeline provides it: reports are then recorded but change nothing.
   * `route.emailId` is the email a signed return path proved the report answers (null when the
   * message reached the workspace some other way: such a report changes nothing).
   */
  apply?(em: EntityManager, route: InboundRoute, report: R, inboxMessageId: string): Promise<{ unapplied?: string }>;
}

/** Raw messages larger than this are not classified (kind `message`): reports are small. */
export const CLASSIFY_MAX_BYTES = 2 * 1024 * 1024;

/** Kinds whose report changes delivery state. */
export function appliesReport(kind: InboxMessageKind): boolean {
  return kind === 'bounce' || kind === 'delay' || kind === 'complaint';
}
