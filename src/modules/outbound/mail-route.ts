import type { DnsResolver } from '../../dns/resolver.ts';
import { forbiddenRangeOf } from '../../net/address-policy.ts';

/** Where a domain's mail goes: addresses to try in order, or why there is nowhere (permanent or not). */
export type MailRoute =
  { kind: 'hosts'; hosts: { name: string; address: string }[] } | { kind: 'none'; permanent: boolean; response: string };

const MAX_HOSTS = 5;

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/**
 * The hosts that receive `domain`'s mail (RFC 5321 §5.1): its MX records by preference (equal
 * preferences in random order), each host's IPv4 then IPv6 addresses looked up through
 * Herald's resolver; without MX records the domain itself (its A/AAAA, the implicit MX). A
 * null MX (RFC 7505) or a domain with neither is a permanent "no mail server"; DNS that does
 * not answer is temporary. Unless `allowPrivateTargets`, an address in a range the address
 * policy forbids (loopback, private, link-local, metadata…: src/net/address-policy.ts) is
 * never tried; a domain whose hosts have only such addresses has no route, temporarily (its DNS
 * may be mended, and the refusal is Herald's, not the recipient's: no bounce, no suppression).
 */
export async function resolveMailRoute(
  dns: Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>,
  domain: string,
  { maxHosts = MAX_HOSTS, allowPrivateTargets = false }: { maxHosts?: number | undefined; allowPrivateTargets?: boolean } = {},
): Promise<MailRoute> {
  const mx = await dns.mx(domain);
  if (mx.status === 'unreachable')
    return { kind: 'none', permanent: false, response: `DNS did not answer for the MX of ${domain} (${mx.error})` };
  let names: string[];
  if (mx.status === 'found') {
    if (mx.records.some((record) => record.exchange === '' || record.exchange === '.')) {
      return { kind: 'none', permanent: true, response: `550 5.1.10 ${domain} accepts no mail (null MX, RFC 7505)` };
    }
    const byPreference = new Map<number, string[]>();
    for (const record of mx.records)
      byPreference.set(record.priority, [...(byPreference.get(record.priority) ?? []), record.exchange.toLowerCase()]);
    names = [...byPreference.entries()].sort(([a], [b]) => a - b).flatMap(([, hosts]) => shuffle(hosts));
  } else {
    names = [domain];
  }
  const hosts: { name: string; address: string }[] = [];
  const refused: string[] = [];
  let unanswered = false;
  for (const name of names.slice(0, maxHosts)) {
    const [a, aaaa] = await Promise.all([dns.a(name), dns.aaaa(name)]);
    if (a.status === 'unreachable' || aaaa.status === 'unreachable') unanswered = true;
    for (const address of [...(a.status === 'found' ? a.records : []), ...(aaaa.status === 'found' ? aaaa.records : [])]) {
      const range = allowPrivateTargets ? null : forbiddenRangeOf(address);
      if (range) refused.push(`${name} [${address}] (${range})`);
      else hosts.push({ name, address });
    }
  }
  if (hosts.length > 0) return { kind: 'hosts', hosts };
  if (refused.length > 0) {
    return {
      kind: 'none',
      permanent: false,
      response: `the mail hosts of ${domain} have only addresses Herald does not deliver to: ${refused.join(', ')}`,
    };
  }
  if (unanswered) return { kind: 'none', permanent: false, response: `DNS did not answer for the mail hosts of ${domain}` };
  return {
    kind: 'none',
    permanent: true,
    response:
      mx.status === 'found'
        ? `550 5.1.2 the MX hosts of ${domain} have no address`
        : `550 5.1.2 ${domain} has no mail server (no MX, A or AAAA record)`,
  };
}
