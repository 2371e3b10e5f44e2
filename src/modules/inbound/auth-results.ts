import type { Readable } from 'node:stream';
import { authenticate, type AuthenticateResult, type DNSResolver } from 'mailauth';
import type { Config } from '../../config.ts';
import { cacheDnsAnswers } from '../../dns/answer-cache.ts';
import { configuredResolver } from '../../dns/resolver.ts';

/** What the inbox keeps of SPF, DKIM, DMARC and ARC for one message (an extension field). */
export interface AuthResultsSummary {
  spf: { result: string; domain: string | null };
  dkim: { result: string; signatures: { domain: string; selector: string | null; result: string; aligned: boolean }[] };
  dmarc: { result: string; policy: string | null; domain: string | null };
  arc?: { result: string };
}

/** Gives up on the checks after this long; the results are then `temperror`. */
const AUTH_DEADLINE_MS = 30_000;

/** DNS answers the authentication checks keep (senders' SPF, DKIM and DMARC records, PTRs). */
const AUTH_DNS_CACHE_ENTRIES = 10_000;

/**
 * mailauth's resolver over the configured DNS servers (DNS_SERVERS, else the system's) with
 * DNS_TIMEOUT_MS and one retry, behind an answer cache of DNS_CACHE_TTL_SECONDS (a burst from
 * one sender asks once). Failures reach mailauth as DNS errors, which it reports as
 * `temperror` (unreachable) or `none` (no record): never a failed ingestion.
 */
export function createAuthResolver(config: { dns: Pick<Config['dns'], 'servers' | 'timeoutMs' | 'cacheTtlMs'> }): DNSResolver {
  const resolver = configuredResolver(config);
  const query = (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>;
  return cacheDnsAnswers(query, { ttlMs: config.dns.cacheTtlMs, maxEntries: AUTH_DNS_CACHE_ENTRIES });
}

/** Nothing could be checked (DNS or the message did not allow it). */
function temperror(): AuthResultsSummary {
  return {
    spf: { result: 'temperror', domain: null },
    dkim: { result: 'temperror', signatures: [] },
    dmarc: { result: 'temperror', policy: null, domain: null },
    arc: { result: 'temperror' },
  };
}

/** The summary of mailauth's full result. */
export function summarizeAuth(result: AuthenticateResult): AuthResultsSummary {
  const signatures = (result.dkim?.results ?? []).map((row) => ({
    domain: String(row.signingDomain ?? ''),
    selector: row.selector ? String(row.selector) : null,
    result: String(row.status?.result ?? 'none'),
    aligned: Boolean(row.status?.aligned),
  }));
  const dkim = signatures.some((row) => row.result === 'pass') ? 'pass' : (signatures[0]?.result ?? 'none');
  const spf = result.spf
    ? { result: String(result.spf.status?.result ?? 'none'), domain: result.spf.domain ? String(result.spf.domain) : null }
    : { result: 'none', domain: null };
  const dmarc = result.dmarc
    ? {
        result: String(result.dmarc.status?.result ?? 'none'),
        policy: result.dmarc.policy ? String(result.dmarc.policy) : null,
        domain: result.dmarc.domain ? String(result.dmarc.domain) : null,
      }
    : { result: 'none', policy: null, domain: null };
  return {
    spf,
    dkim: { result: dkim, signatures },
    dmarc,
    ...(result.arc ? { arc: { result: String(result.arc.status?.result ?? 'none') } } : {}),
  };
}

export interface AuthCheckInput {
  raw: Readable;
  mailFrom: string;
  remoteAddress: string | null;
  heloName: string | null;
  /** This MX's name, the authserv-id. */
  mta: string;
  resolver: DNSResolver;
}

/**
 * Runs SPF, DKIM, DMARC and ARC on a raw message (mailauth `authenticate`) with the SMTP
 * envelope and client address. Never rejects: DNS outages and broken messages give
 * `temperror`/`none`, and the checks give up after AUTH_DEADLINE_MS.
 */
export async function checkAuthentication(input: AuthCheckInput): Promise<AuthResultsSummary> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), AUTH_DEADLINE_MS);
  });
  try {
    const result = await Promise.race([
      authenticate(input.raw, {
        sender: input.mailFrom,
        ...(input.remoteAddress ? { ip: input.remoteAddress.replace(/^::ffff:/, '') } : {}),
        ...(input.heloName ? { helo: input.heloName } : {}),
        mta: input.mta,
        resolver: input.resolver,
        disableBimi: true,
      }),
      deadline,
    ]);
    if (result === 'timeout') {
      input.raw.destroy();
      return temperror();
    }
    return summarizeAuth(result);
  } catch {
    input.raw.destroy();
    return temperror();
  } finally {
    clearTimeout(timer);
  }
}
