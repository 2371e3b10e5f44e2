import type { EmailStatus, RecipientKind, RecipientStatus } from '../../../db/entities/index.ts';
import type { HandoffResult } from '../sends/handoff.repo.ts';
import type { MessageSource } from './message-builder.ts';

export interface DeliverInput {
  orgId: string;
  emailId: string;
  attempt: number;
  /** When deferred recipients will be tried next (for email.deferred), or null if never. */
  nextDelayMs: number | null;
}

export interface DeliverResult {
  /** `sending` while deferred recipients remain. */
  status: EmailStatus;
  handoff: HandoffResult;
  /** Not attempted: its egress pool has no room today, or shaping held every recipient back; due again then (no attempt, no event). */
  heldUntil?: Date;
  /** The hold is shaping's: it ends no later than the email's retry window (an egress pool's waits for its day whatever the window). */
  heldWithinWindow?: boolean;
}

/** An email as an attempt sees it. */
export type AttemptedEmail = MessageSource & { domain: string; broadcastId?: string | null; sandbox: boolean; stream?: string };

/** A recipient of an email as an attempt sees it. */
export interface SendRecipient {
  id: string;
  email: string;
  kind: RecipientKind;
  status: RecipientStatus;
}

/** An email a drain claimed (status sending, attempt counted): everything an attempt needs. */
export interface ClaimedSend extends MessageSource {
  orgId: string;
  domain: string;
  /** Set for a broadcast's message (its events count for the broadcast). */
  broadcastId: string | null;
  /** Accepted with a test key: goes to the sandbox relay, the final hop. */
  sandbox: boolean;
  /** Its message stream (an egress pool may be chosen per stream). */
  stream?: string;
  /** This attempt's number. */
  handoffAttempts: number;
  recipients: SendRecipient[];
}
