/**
 * Whether an inbound message was sent by a machine in answer to another (an out-of-office, a
 * vacation notice, a ticket receipt) or by a list robot, rather than written by a person. Such
 * a message is kept in the inbox like any other, but it is no reply for automations: it fires no
 * `email.replied` trigger and ends no wait for a reply. The signals, most reliable first:
 *
 * - `Auto-Submitted` with any value but `no` (RFC 3834: `auto-replied`, `auto-generated`, …);
 * - `X-Autoreply` or `X-Autorespond` present with any value but `no` (older vacation programs);
 * - `Precedence` `auto_reply`, `bulk`, `junk` or `list` (RFC 2076's de facto values);
 * - a subject that starts with a marker the common mail programs put there for an absence
 *   notice (`Automatic reply:`, `Out of Office:`, `Auto-Reply:`, their German, French, Spanish,
 *   Italian and Dutch forms), followed by a colon so a person's own words do not match.
 *
 * The report classifier (report-classifier.ts) already files the clearest of these as inbox
 * messages of kind `auto_reply`; this rule is broader (any `Auto-Submitted` but `no`, bulk and
 * list mail) and holds where no classifier ran (an oversized message), without changing what
 * the inbox calls the message: a newsletter answering an email is no auto-reply, but no reply
 * either.
 */

/** A header of the message: its name lower-cased and its whole line as received. */
export interface HeaderLine {
  key: string;
  line: string;
}

const PRECEDENCE = new Set(['auto_reply', 'bulk', 'junk', 'list']);

const SUBJECT_MARKERS =
  /^\s*(automatic reply|auto[- ]?reply|autoreply|auto[- ]?response|out of (the )?office|abwesenheitsnotiz|automatische antwort|réponse automatique|respuesta automática|risposta automatica|automatisch antwoord)\s*:/i;

/** The value of a header line, unfolded, lower-cased, without comments or parameters. */
function token(line: string): string {
  const value = line.slice(line.indexOf(':') + 1).replace(/\s+/g, ' ');
  return value
    .replace(/\([^)]*\)/g, '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
}

/** Why the headers mark the message as automatic (`Auto-Submitted: auto-replied`), or null. */
export function automaticHeader(lines: readonly HeaderLine[]): string | null {
  for (const { key, line } of lines) {
    const value = token(line);
    if (key === 'auto-submitted' && value !== 'no' && value !== '') return `Auto-Submitted: ${value}`;
    if ((key === 'x-autoreply' || key === 'x-autorespond') && value !== 'no')
      return `${key === 'x-autoreply' ? 'X-Autoreply' : 'X-Autorespond'}: ${value}`;
    if (key === 'precedence' && PRECEDENCE.has(value)) return `Precedence: ${value}`;
  }
  return null;
}

/** Why the message is an automatic one and no reply (its headers, else its subject), or null for a person's message. */
export function autoReplyReason(message: { automaticHeader: string | null; subject: string }): string | null {
  if (message.automaticHeader) return message.automaticHeader;
  const marker = SUBJECT_MARKERS.exec(message.subject);
  return marker ? `subject: ${marker[0].trim()}` : null;
}
