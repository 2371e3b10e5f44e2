import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS, type MikroORM } from '../../db/orm.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';

/**
 * The checks every message Herald hands to a relay or an MX must pass (issue 15 item 4): it
 * parses with mailparser, carries Message-ID, Date and From, has no bare LF or CR (RFC 5322
 * §2.3) and no line over 998 octets (§2.1.1), and, given the workspace's domains, its DKIM
 * signature verifies with mailauth against the key Herald publishes for the From domain.
 * Returns the problems found (none for a good message).
 */
export async function messageProblems(raw: Buffer, options: { orm?: MikroORM } = {}): Promise<string[]> {
  const problems: string[] = [];
  const text = raw.toString('latin1');
  if (/(^|[^\r])\n/.test(text)) problems.push('bare LF');
  if (/\r(?!\n)/.test(text)) problems.push('bare CR');
  const long = text.split('\r\n').findIndex((line) => line.length > 998);
  if (long >= 0) problems.push(`line ${long + 1} is over 998 octets`);
  let parsed;
  try {
    parsed = await simpleParser(raw);
  } catch (error) {
    return [...problems, `mailparser: ${(error as Error).message}`];
  }
  if (!parsed.messageId) problems.push('no Message-ID');
  if (!parsed.headers.has('date')) problems.push('no Date');
  const from = parsed.from?.value[0]?.address;
  if (!from) problems.push('no From');
  if (options.orm && from) {
    const domainName = from.slice(from.lastIndexOf('@') + 1).toLowerCase();
    const domain = await options.orm.em.fork().findOne(Domain, { domain: domainName }, ALL_TENANTS);
    if (!domain) {
      problems.push(`no sending domain ${domainName}`);
    } else {
      const record = dkimDnsValue(domain.dkimPublicKey);
      const verified = await dkimVerify(raw, {
        resolver: (name: string, type: string) =>
          type === 'TXT' && name === `${domain.dkimSelector}._domainkey.${domain.domain}`
            ? Promise.resolve([[record]])
            : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
      });
      const result = verified.results.find((r) => r.signingDomain === domain.domain);
      if (result?.status?.result !== 'pass') problems.push(`DKIM ${result?.status?.result ?? 'missing'} for ${domain.domain}`);
    }
  }
  return problems;
}
