import nodemailer, { type Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { DnsResolver } from '../../dns/resolver.ts';
import type { Logger } from '../../logger.ts';
import { forbiddenRangeOf } from '../../net/address-policy.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import { buildTransportTls, createTlsFailureLog, type TlsFailureLog } from './relay-tls.ts';
import { mxMatches, type MtaSts } from './mta-sts.ts';
import { sendOnTransport, type Relay, type RelayRecipientResult, type RelayResult } from './relay.ts';
import type { DestinationShaper } from './shaping/destination-shaper.ts';
import { inDestinationSlot } from './shaping/destination-slot.ts';
import { rollupKeyOf } from './shaping/destination-rollup.ts';

export interface DirectDeliveryOptions {
  dns: Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>;
  /** The name given in EHLO (SMTP_HELO_NAME). */
  heloName: string;
  /** The port of every MX host (25). */
  port: number;
  /** Connections to one destination host at most. */
  poolSize: number;
  /** Messages per minute to one destination host at most (0: no limit). */
  ratePerMinute: number;
  tls: RelayTlsSettings;
  logger: Logger;
  /** Destination hosts tried per domain, in preference order. */
  maxHosts?: number;
  /** MTA-STS policies to honour (null: off). */
  mtaSts?: MtaSts | null;
  /** The trusted certificate authorities (PEM) for hosts whose certificate is verified; Node's public roots when absent. */
  ca?: string[];
  /** SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: MX addresses in the address policy's forbidden ranges are tried too (tests, private networks). */
  allowPrivateTargets: boolean;
  /** Per-destination limits shared by the workers (shaping/destination-shaper.ts); null or absent: none. */
  shaper?: DestinationShaper | null;
  /** The source address every connection binds to (an egress pool's); the OS chooses when absent. */
  localAddress?: string;
}

/** Where a domain's mail goes: addresses to try in order, or why there is nowhere (permanent or not). */
export type MailRoute =
  { kind: 'hosts'; hosts: { name: string; address: string }[] } | { kind: 'none'; permanent: boolean; response: string };

/** Open pools kept at most; the least recently used is closed past it. */
const POOLS_MAX = 500;
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
  dns: DirectDeliveryOptions['dns'],
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

/** The same answer for every recipient of one domain (the message refused, no route, no answer). */
function forAll(recipients: readonly string[], accepted: boolean, code: number | null, response: string): RelayRecipientResult[] {
  return recipients.map((email) => ({ email: email.toLowerCase(), accepted, code, response }));
}

/**
 * Direct-to-MX delivery (SMTP_DELIVERY=direct), behind the same Relay interface as the relay:
 * the recipients are grouped by domain and each group goes to its domain's MX in its own SMTP
 * transaction, trying the next host when one cannot be reached. The answers come back per
 * recipient, so a 5xx for one domain (or one recipient) bounces only those recipients, a 4xx
 * or an unreachable domain defers them to the slow path's retries, and a domain without a mail
 * server bounces at once. One nodemailer pool per destination address (at most `poolSize`
 * connections, `ratePerMinute` messages), EHLO as `heloName`, STARTTLS as `tls` says (the
 * certificate checked against the MX host name under `verify`).
 */
export function createDirectRelay(options: DirectDeliveryOptions): Relay {
  const pools = new Map<string, { transport: Transporter; tls: RelayTlsSettings; tlsFailures: TlsFailureLog }>();

  /** The TLS a host gets: verified against its name (SMTP_DIRECT_TLS=verify, or an enforced MTA-STS policy), else the configured policy. */
  function tlsFor(host: { name: string }, verify: boolean) {
    const settings: RelayTlsSettings = verify ? { policy: 'verify', source: 'host' } : options.tls;
    const transport = buildTransportTls(settings, false);
    const ca = verify && options.ca ? { ca: options.ca } : {};
    return { settings, transport: { ...transport, tls: { ...transport.tls, servername: host.name, ...ca } } };
  }

  function poolFor(host: { name: string; address: string }, verify: boolean) {
    const key = `${host.address}|${host.name}|${verify ? 'verify' : options.tls.policy}`;
    const found = pools.get(key);
    if (found) {
      pools.delete(key);
      pools.set(key, found);
      return found;
    }
    if (pools.size >= POOLS_MAX) {
      const [oldest, pool] = pools.entries().next().value!;
      pools.delete(oldest);
      pool.transport.close();
    }
    const tls = tlsFor(host, verify);
    const transport = nodemailer.createTransport({
      pool: true,
      host: host.address,
      port: options.port,
      name: options.heloName,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      ...tls.transport,
      maxConnections: options.poolSize,
      maxMessages: 100,
      ...(options.ratePerMinute > 0 ? { rateDelta: 60_000, rateLimit: options.ratePerMinute } : {}),
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 60_000,
      disableFileAccess: true,
      disableUrlAccess: true,
    } satisfies SMTPPool.Options);
    const pool = {
      transport,
      tls: tls.settings,
      tlsFailures: createTlsFailureLog(options.logger, {
        address: `${host.name} [${host.address}]:${options.port}`,
        settings: tls.settings,
      }),
    };
    pools.set(key, pool);
    return pool;
  }

  /** One domain's recipients: each host in turn until one answers. */
  async function sendToDomain(
    message: Mail.Options,
    from: string,
    domain: string,
    recipients: string[],
  ): Promise<{ results: RelayRecipientResult[]; response: string | null }> {
    const route = await resolveMailRoute(options.dns, domain, {
      maxHosts: options.maxHosts,
      allowPrivateTargets: options.allowPrivateTargets,
    });
    if (route.kind === 'none') {
      return { results: forAll(recipients, false, route.permanent ? 550 : null, route.response), response: route.response };
    }
    let hosts = route.hosts;
    let enforced = false;
    if (options.mtaSts) {
      const verdict = await options.mtaSts.policyFor(domain);
      if (verdict.kind === 'policy' && verdict.policy.mode !== 'none') {
        const listed = hosts.filter((host) => verdict.policy.mx.some((pattern) => mxMatches(pattern, host.name)));
        if (verdict.policy.mode === 'enforce') {
          if (listed.length === 0) {
            const response = `MTA-STS: the enforced policy of ${domain} names none of its MX hosts (${[...new Set(hosts.map((h) => h.name))].join(', ')})`;
            return { results: forAll(recipients, false, null, response), response };
          }
          hosts = listed;
          enforced = true;
        } else if (listed.length < hosts.length) {
          options.logger.info('MTA-STS testing policy would refuse some MX hosts', {
            domain,
            refused: hosts.filter((h) => !listed.includes(h)).map((h) => h.name),
          });
        }
      }
    }
    const shaper = options.shaper;
    const send = () => sendToHosts(message, from, domain, recipients, hosts, enforced);
    if (!shaper) return send();
    return inDestinationSlot(shaper, rollupKeyOf(hosts.map((host) => host.name)), send, (response, heldMs) => ({
      results: forAll(recipients, false, null, response).map((result) => ({ ...result, heldMs })),
      response,
    }));
  }

  /** The transaction with the first of `hosts` that answers. */
  async function sendToHosts(
    message: Mail.Options,
    from: string,
    domain: string,
    recipients: string[],
    hosts: { name: string; address: string }[],
    enforced: boolean,
  ): Promise<{ results: RelayRecipientResult[]; response: string | null }> {
    let last: RelayResult | null = null;
    for (const host of hosts) {
      const pool = poolFor(host, enforced || options.tls.policy === 'verify');
      const result = await sendOnTransport(
        pool.transport,
        message,
        { from, to: recipients },
        { tls: pool.tls, tlsFailures: pool.tlsFailures },
      );
      last = result;
      // A host that does not answer, or answers 4xx to the whole message, leaves the next one to try (RFC 5321 §5.1).
      if (result.kind === 'unreachable' || (result.kind === 'message_refused' && !result.permanent)) continue;
      if (result.kind === 'message_refused')
        return { results: forAll(recipients, false, result.code, `${host.name}: ${result.response}`), response: result.response };
      return {
        results: result.recipients.map((r) => (r.accepted ? r : { ...r, response: `${host.name}: ${r.response ?? ''}` })),
        response: result.response,
      };
    }
    const response = last?.kind === 'message_refused' ? last.response : (last?.response ?? 'no host answered');
    const code = last?.kind === 'message_refused' ? last.code : null;
    return { results: forAll(recipients, false, code, `no mail host of ${domain} took the message: ${response}`), response };
  }

  return {
    async send(message, envelope) {
      const byDomain = new Map<string, string[]>();
      for (const recipient of envelope.to) {
        const domain = recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase();
        byDomain.set(domain, [...(byDomain.get(domain) ?? []), recipient]);
      }
      const answers = await Promise.all(
        [...byDomain.entries()].map(([domain, recipients]) => sendToDomain(message, envelope.from, domain, recipients)),
      );
      const results = answers.flatMap((answer) => answer.results);
      const byEmail = new Map(results.map((r) => [r.email, r]));
      return {
        kind: 'recipients',
        recipients: envelope.to.map(
          (email) => byEmail.get(email.toLowerCase()) ?? { email: email.toLowerCase(), accepted: false, code: null, response: 'no answer' },
        ),
        response: answers.find((answer) => answer.response !== null)?.response ?? null,
      };
    },
    close() {
      for (const pool of pools.values()) pool.transport.close();
      pools.clear();
      options.shaper?.close();
    },
  };
}
