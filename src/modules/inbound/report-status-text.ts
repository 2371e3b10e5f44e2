/**
 * Reads an RFC 3463 enhanced status code out of a report's free text when the report carries
 * none of its own: an enhanced code quoted from the remote server, else the subject and detail
 * a vendor phrase stands for ("user unknown" → X.1.1), else the code an SMTP reply implies
 * (552 → 5.2.2), else the reply's class (`550` → 5.0.0). Tables are data; no I/O.
 */

const ENHANCED_G = /(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\d|\.\d)/g;

/**
 * An enhanced code right after an SMTP reply code (`550 5.1.1`, `550-'5.2.2`, `<421 4.4.2`):
 * that is the remote server's own answer, quoted inside a report written by a relay.
 */
const REMOTE_REPLY = /(?<![\w.])([245])\d\d[ -]['"]?([245]\.\d{1,3}\.\d{1,3})(?!\d|\.\d)/g;

/** A remote reply quoted in angle brackets at the end of a relay's own text (SES, WorkMail). */
const NESTED_REPLY = /<\s*[245]\d\d[ -]([245]\.\d{1,3}\.\d{1,3})(?!\d|\.\d)/;

function normalise(code: string): string {
  const [a, b, c] = code.split('.');
  return `${a}.${Number(b)}.${Number(c)}`;
}

/**
 * The enhanced code a diagnostic attributes to the remote server: the last one written right
 * after an SMTP reply code, else the first enhanced code at all; null without one.
 */
export function remoteStatus(text: string | null): string | null {
  if (!text) return null;
  const replies = [...text.matchAll(REMOTE_REPLY)];
  if (replies.length > 0) return normalise(replies.at(-1)![2]!);
  const first = ENHANCED_G.exec(text);
  ENHANCED_G.lastIndex = 0;
  return first ? normalise(`${first[1]}.${first[2]}.${first[3]}`) : null;
}

/** The code of a remote reply quoted in `<...>` inside a relay's diagnostic, or null. */
export function nestedRemoteStatus(text: string | null): string | null {
  const m = text ? NESTED_REPLY.exec(text) : null;
  return m ? normalise(m[1]!) : null;
}

/**
 * Vendor and MTA phrases → the subject.detail of RFC 3463 they describe. First match wins,
 * so the specific phrases come before the broad ones. Broad phrases ("rejected", "denied")
 * also occur in boilerplate and links, so they are read only in a recipient's own diagnostic.
 */
interface Phrase {
  detail: string;
  pattern: RegExp;
  broad?: boolean;
}

const PHRASES: Phrase[] = [
  {
    detail: '2.2',
    pattern:
      /mailbox (is )?full|mailbox is over|over ?quota|quota (exceeded|full)|exceeded (the )?(storage|quota)|insufficient (disk )?space|mailbox size limit|mailfolder is full|out of storage|メールボックスが一杯/i,
  },
  {
    detail: '1.1',
    pattern:
      /user unknown|unknown user|no such (user|mailbox|recipient|address|account)|(user|recipient|address|mailbox|account) (does not|doesn't|did not) exist|not listed in (the )?(domino )?directory|not listed in public name & address book|invalid (user|recipient|mailbox|e-?mail)( address)?|recipient not found|unknown recipient|no valid recipients?|address (is )?unknown|unknown (e-?mail )?address|user not found|no mailbox here|doesn't have an? \S+ account|check if (the )?address is correct|and other recipients in the same domain|ディレクトリのリストにありません|宛先.{0,10}(存在しません|見つかりません)/i,
  },
  {
    detail: '4.3',
    pattern:
      /name service error|host not found, try again|temporary (dns|name (server|service)) (failure|error)|dns (temporary|temporarily)/i,
  },
  {
    detail: '1.2',
    pattern:
      /host (\S+ )?(not found|unknown)|unknown host|domain (\S+ )?(not found|does not exist)|dns lookup fail|no mx (record|host)|name or service not known|unrout(e)?able (address|domain)/i,
  },
  { detail: '1.3', pattern: /malformed address|bad address syntax|invalid address syntax/i },
  {
    detail: '2.1',
    pattern:
      /account (is |has been )?(disabled|suspended|inactive|closed|deactivated)|mailbox (is )?(disabled|inactive|suspended)|user (is )?suspended|account is locked/i,
  },
  { detail: '3.4', pattern: /message (size )?(is )?too (big|large)|message size exceeds|exceeds (the )?(maximum )?(message )?size/i },
  { detail: '4.6', pattern: /hop count exceeded|routing loop|mail loop|loop detected/i },
  { detail: '3.0', pattern: /loop alert|loop back warning|duplicated message-id/i },
  {
    detail: '4.7',
    pattern:
      /message expired|expired|not delivered within|could not deliver for the last|giving up|gave up|retry time(out)? (exceeded|reached)|too long in (the )?queue|in the queue too long|did not accept our requests to connect/i,
  },
  { detail: '4.1', pattern: /connection (timed out|refused)|no answer from host|no route to host/i, broad: true },
  {
    broad: true,
    detail: '7.1',
    pattern:
      /not (a )?member|rejected|blocked|denied|filtered|refused|spam|policy|not authori[sz]ed|unwanted messages|blacklist|block ?list/i,
  },
];

/** SMTP reply codes that name a more specific condition than their class (RFC 5321, RFC 7504). */
const REPLY_STATUS: Record<string, string> = {
  '551': '5.1.6',
  '552': '5.2.2',
  '553': '5.1.3',
  '521': '5.3.2',
  '556': '5.1.10',
};

const REPLY = /(?<![\w.:/-])([245][0-5]\d)(?=[\s-]|$)/;

/** Wording that says the failure is temporary, whatever the report's action. */
const TEMPORARY = /(?<!not going to |not )try again|temporar|will retry|transient/i;

/**
 * A status for a diagnostic that carries no enhanced code. The class comes from an SMTP reply
 * code in the text, else temporary wording (4), else the action (failed → 5, delayed → 4);
 * null without any evidence. `specificOnly` skips the broad phrases (for whole-report text).
 */
export function statusFromWording(text: string | null, action: 'failed' | 'delayed' | null, specificOnly = false): string | null {
  if (!text) return null;
  const reply = REPLY.exec(text)?.[1] ?? null;
  const cls = reply ? reply[0]! : TEMPORARY.test(text) || action === 'delayed' ? '4' : action === 'failed' ? '5' : null;
  const phrase = PHRASES.find((p) => !(specificOnly && p.broad) && p.pattern.test(text));
  if (phrase && cls && cls !== '2') return `${cls}.${phrase.detail}`;
  if (reply && REPLY_STATUS[reply]) return REPLY_STATUS[reply];
  return reply ? `${reply[0]}.0.0` : null;
}
