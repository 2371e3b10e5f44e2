/**
 * The mailbox simulator's rules, as pure functions: which reply a recipient at the simulator
 * domain gets at RCPT, and what to do after DATA. Everything outside the simulator domain,
 * and every unknown local part inside it, is simply accepted (the sink is the final hop).
 * Shared by the dev mail sink (src/dev/mail-sink.ts) and the sandbox relay test keys send to.
 */

/** The reserved domain of the simulated mailboxes (`bounce@`, `complaint@`, …). */
export const SIMULATOR_DOMAIN = 'simulator.herald.test';
export type SimulatedMailbox = 'delivered' | 'bounce' | 'softbounce' | 'complaint' | 'suppressed' | 'reject';

export interface SmtpReply {
  code: number;
  message: string;
}

/** smtp-server's own reply text for an accepted RCPT (it sends this when the handler passes). */
export const RCPT_ACCEPTED: SmtpReply = { code: 250, message: 'Accepted' };

export const BOUNCE_REPLY: SmtpReply = { code: 550, message: '5.1.1 mailbox does not exist (simulated hard bounce)' };
export const SOFT_BOUNCE_REPLY: SmtpReply = {
  code: 451,
  message: '4.2.0 mailbox temporarily unavailable, try again later (simulated soft bounce)',
};
export const SUPPRESSED_REPLY: SmtpReply = { code: 550, message: '5.1.1 address on suppression list' };
/** reject@: the whole message is refused after DATA, as a provider refusing content would. */
export const REJECT_REPLY: SmtpReply = { code: 554, message: '5.7.1 message rejected (simulated provider rejection)' };

/**
 * The simulated mailbox an address stands for, or null when it is not at the simulator
 * domain. Local part and domain compare case-insensitively; a `+tag` after the local part is
 * ignored (`bounce+case7@…` behaves like `bounce@…`), so tests can tell their messages apart.
 */
export function simulatedMailbox(address: string, simulatorDomain: string): SimulatedMailbox | null {
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  if (address.slice(at + 1).toLowerCase() !== simulatorDomain.toLowerCase()) return null;
  const local = address.slice(0, at).toLowerCase().split('+')[0];
  switch (local) {
    case 'bounce':
    case 'softbounce':
    case 'complaint':
    case 'suppressed':
    case 'reject':
      return local;
    default:
      return 'delivered';
  }
}

/**
 * The key soft bounces are counted under. RCPT comes before the message (and its Message-ID)
 * is known, so the count is kept per envelope sender + recipient; Herald's VERP sender
 * (bounce+<emailId>@…) makes that one count per email.
 */
export function softBounceKey(mailFrom: string, recipient: string): string {
  return `${mailFrom.toLowerCase()}\n${recipient.toLowerCase()}`;
}

/**
 * The RCPT reply for a recipient, given how many soft bounces its key has had so far.
 * Returns the reply and whether this reply counts as another soft bounce.
 */
export function rcptReply(
  mailbox: SimulatedMailbox | null,
  softBouncesSoFar: number,
  softBounceAttempts: number,
): { reply: SmtpReply; countsSoftBounce: boolean } {
  if (mailbox === 'bounce') return { reply: BOUNCE_REPLY, countsSoftBounce: false };
  if (mailbox === 'suppressed') return { reply: SUPPRESSED_REPLY, countsSoftBounce: false };
  if (mailbox === 'softbounce' && softBouncesSoFar < softBounceAttempts) return { reply: SOFT_BOUNCE_REPLY, countsSoftBounce: true };
  return { reply: RCPT_ACCEPTED, countsSoftBounce: false };
}
