import type Mail from 'nodemailer/lib/mailer/index.js';
import type { DirectDeliveryOptions } from './direct-delivery.types.ts';
import { createDirectPools, type DirectPools } from './direct-pools.ts';
import { resolveMailRoute } from './mail-route.ts';
import { mxMatches } from './mta-sts.ts';
import { sendOnTransport, type Relay, type RelayRecipientResult, type RelayResult } from './relay.ts';
import { inDestinationSlot } from './shaping/destination-slot.ts';
import { rollupKeyOf } from './shaping/destination-rollup.ts';

export type { DirectDeliveryOptions } from './direct-delivery.types.ts';
export { resolveMailRoute, type MailRoute } from './mail-route.ts';

type Host = { name: string; address: string };
type DomainAnswer = { results: RelayRecipientResult[]; response: string | null };

/** The same answer for every recipient of one domain (the message refused, no route, no answer). */
function forAll(recipients: readonly string[], accepted: boolean, code: number | null, response: string): RelayRecipientResult[] {
  return recipients.map((email) => ({ email: email.toLowerCase(), accepted, code, response }));
}

/**
 * The hosts `domain`'s MTA-STS policy lets Herald use: under an enforced policy only the listed
 * ones, verified (none listed: a refusal); a testing policy only logs the hosts it would refuse.
 */
async function applyMtaSts(
  options: DirectDeliveryOptions,
  domain: string,
  hosts: Host[],
): Promise<{ hosts: Host[]; enforced: boolean } | { refusal: string }> {
  if (!options.mtaSts) return { hosts, enforced: false };
  const verdict = await options.mtaSts.policyFor(domain);
  if (verdict.kind !== 'policy' || verdict.policy.mode === 'none') return { hosts, enforced: false };
  const listed = hosts.filter((host) => verdict.policy.mx.some((pattern) => mxMatches(pattern, host.name)));
  if (verdict.policy.mode === 'enforce') {
    if (listed.length === 0) {
      return {
        refusal: `MTA-STS: the enforced policy of ${domain} names none of its MX hosts (${[...new Set(hosts.map((h) => h.name))].join(', ')})`,
      };
    }
    return { hosts: listed, enforced: true };
  }
  if (listed.length < hosts.length) {
    options.logger.info('MTA-STS testing policy would refuse some MX hosts', {
      domain,
      refused: hosts.filter((h) => !listed.includes(h)).map((h) => h.name),
    });
  }
  return { hosts, enforced: false };
}

/** The transaction with the first of `hosts` that answers. */
async function sendToHosts(
  options: DirectDeliveryOptions,
  pools: DirectPools,
  message: Mail.Options,
  envelope: { from: string; domain: string; recipients: string[] },
  hosts: Host[],
  enforced: boolean,
): Promise<DomainAnswer> {
  const { from, domain, recipients } = envelope;
  let last: RelayResult | null = null;
  for (const host of hosts) {
    const pool = pools.poolFor(host, enforced || options.tls.policy === 'verify');
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

/** One domain's recipients: its route, its MTA-STS policy, then each host in turn until one answers (in a shaper slot when shaped). */
async function sendToDomain(
  options: DirectDeliveryOptions,
  pools: DirectPools,
  message: Mail.Options,
  envelope: { from: string; domain: string; recipients: string[] },
): Promise<DomainAnswer> {
  const { domain, recipients } = envelope;
  const route = await resolveMailRoute(options.dns, domain, {
    maxHosts: options.maxHosts,
    allowPrivateTargets: options.allowPrivateTargets,
  });
  if (route.kind === 'none') {
    return { results: forAll(recipients, false, route.permanent ? 550 : null, route.response), response: route.response };
  }
  const allowed = await applyMtaSts(options, domain, route.hosts);
  if ('refusal' in allowed) return { results: forAll(recipients, false, null, allowed.refusal), response: allowed.refusal };
  const shaper = options.shaper;
  const send = () => sendToHosts(options, pools, message, envelope, allowed.hosts, allowed.enforced);
  if (!shaper) return send();
  return inDestinationSlot(shaper, rollupKeyOf(allowed.hosts.map((host) => host.name)), send, (response, heldMs) => ({
    results: forAll(recipients, false, null, response).map((result) => ({ ...result, heldMs })),
    response,
  }));
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
  const pools = createDirectPools(options);
  return {
    async send(message, envelope) {
      const byDomain = new Map<string, string[]>();
      for (const recipient of envelope.to) {
        const domain = recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase();
        byDomain.set(domain, [...(byDomain.get(domain) ?? []), recipient]);
      }
      const answers = await Promise.all(
        [...byDomain.entries()].map(([domain, recipients]) =>
          sendToDomain(options, pools, message, { from: envelope.from, domain, recipients }),
        ),
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
      pools.close();
      options.shaper?.close();
    },
  };
}
