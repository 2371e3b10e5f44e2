/**
 * Report shapes of mail systems whose bounces carry neither a DSN nor the common MTA
 * boilerplate: Apache James and Verizon's vtext gateway, Trend Micro InterScan, KDDI au,
 * fml mailing lists, Verizon MMS, Lotus Domino and Notes. Each shape is data: the patterns
 * that must all be present (in the headers or the text), and one pattern whose named groups
 * `rcpt*` capture a failed recipient and `diag*` its explanation. Pure.
 */

const ADDR = String.raw`[A-Za-z0-9._%+=&'/!#$^{}|~-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`;

export interface VendorShape {
  name: string;
  /** Every pattern must match the report's header block, subject or text. */
  signatures: RegExp[];
  /** Global; groups named `rcpt…` hold the recipient, `diag…` its explanation. */
  report: RegExp;
  /** Where the report ends and the quoted original begins, when the shape has such a line. */
  end?: RegExp;
}

export const VENDOR_SHAPES: VendorShape[] = [
  {
    name: 'apache-james',
    signatures: [/^Error: \S.*$/m, /^Error message below:/m],
    report: new RegExp(
      String.raw`^Error: (?<diag>.+)\n[\s\S]*?Error message below:\s*\n(?<diag2>.+)[\s\S]*?RCPT TO:\s*<?(?<rcpt>${ADDR})>?`,
      'gm',
    ),
  },
  {
    name: 'trend-micro-interscan',
    signatures: [/InterScan/i, /Sent <<< RCPT TO:|Unable to deliver message to </],
    report: new RegExp(
      String.raw`Sent <<< RCPT TO:\s*<(?<rcpt>${ADDR})>\s*\n\s*Received >>> (?<diag>.+)|Unable to deliver message to <(?<rcpt2>${ADDR})>(?<diag2>.*)`,
      'g',
    ),
  },
  {
    name: 'kddi-au',
    signatures: [/Could not be delivered to: </],
    report: new RegExp(String.raw`Could not be delivered to: <(?<rcpt>${ADDR})>\s*\n\s*(?<diag>.+)`, 'g'),
  },
  {
    name: 'fml',
    signatures: [/^X-MLServer:/im, /^From:.*-admin@/im],
    report: new RegExp(String.raw`^(?<diag>.*<(?<rcpt>${ADDR})>.*)$`, 'gm'),
    end: /^\s*Original mail as follows:/m,
  },
  {
    name: 'verizon-mms',
    signatures: [/Message could not be delivered to mobile/i],
    report: new RegExp(String.raw`^Error:\s*(?<diag>.+)[\s\S]*?^To:\s*<?(?<rcpt>${ADDR})>?`, 'gm'),
  },
  {
    name: 'lotus-domino',
    signatures: [/was not delivered to:\s*\n/, /^\s*because:\s*$/m],
    report: new RegExp(String.raw`was not delivered to:\s*\n\s*(?<rcpt>${ADDR})\s*\n\s*because:\s*\n\s*(?<diag>.+)`, 'g'),
  },
  {
    name: 'lotus-notes',
    signatures: [/^-+ Failure Reasons\s+-+\s*$/m],
    report: new RegExp(String.raw`^-+ Failure Reasons\s+-+\s*\n(?<diag>[\s\S]*?)\n\s*(?<rcpt>${ADDR})\s*$`, 'gm'),
  },
];

export interface VendorRecipient {
  email: string;
  diagnostic: string | null;
}

/**
 * The failed recipients of a vendor-shaped report, or null when no shape fits: the signatures
 * must match (`haystack` holds the header block, subject and text) and the report pattern must
 * find at least one recipient, so a message that merely mentions a vendor is not a report.
 */
export function vendorReport(haystack: string, text: string): VendorRecipient[] | null {
  for (const shape of VENDOR_SHAPES) {
    if (!shape.signatures.every((s) => s.test(haystack))) continue;
    const found = vendorRecipients(shape, text);
    if (found.length > 0) return found;
  }
  return null;
}

/** The failed recipients a shape finds in a report's text, in order, without repeats. */
function vendorRecipients(shape: VendorShape, text: string): VendorRecipient[] {
  const found: VendorRecipient[] = [];
  const end = shape.end?.exec(text);
  for (const m of (end ? text.slice(0, end.index) : text).matchAll(shape.report)) {
    const groups = Object.entries(m.groups ?? {});
    const email = groups.find(([name, value]) => name.startsWith('rcpt') && value)?.[1]?.toLowerCase();
    if (!email || found.some((r) => r.email === email)) continue;
    const diagnostic = groups
      .filter(([name, value]) => name.startsWith('diag') && value?.trim())
      .map(([, value]) => value.replace(/\s+/g, ' ').trim())
      .join(' ');
    found.push({ email, diagnostic: diagnostic.slice(0, 1000) || null });
  }
  return found;
}
