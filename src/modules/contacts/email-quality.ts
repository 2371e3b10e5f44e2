import { disposableEmailBlocklistSet } from 'disposable-email-domains-js';
import type { DnsResolver } from '../../dns/resolver.ts';

export type QualityReason = 'DISPOSABLE_DOMAIN' | 'NO_MAIL_SERVER';

export type QualityVerdict = { ok: true; dns: 'checked' | 'unavailable' } | { ok: false; reason: QualityReason; message: string };

let blocklist: Set<string> | undefined;

/** Whether the domain, or any domain above it, is on the maintained disposable-domain list. */
export function isDisposableDomain(domain: string): boolean {
  blocklist ??= disposableEmailBlocklistSet();
  const labels = domain.toLowerCase().split('.');
  for (let i = 0; i < labels.length - 1; i += 1) {
    if (blocklist.has(labels.slice(i).join('.'))) return true;
  }
  return false;
}

/**
 * Address quality for contacts: refuses disposable domains (DISPOSABLE_DOMAIN) and domains that
 * cannot receive mail (NO_MAIL_SERVER: no MX and no A/AAAA, or a null MX). When DNS does not
 * answer, the address is accepted: a resolver outage must not block sign-ups, and delivery
 * will surface a truly dead domain as a bounce. CONTACT_DNS_CHECK=false turns the DNS part off
 * (air-gapped installs; the dev stack does it when the machine's DNS is offline).
 */
export function createEmailQuality(deps: { dns: DnsResolver; checkMailServer: boolean }) {
  return {
    async check(email: string): Promise<QualityVerdict> {
      const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
      if (isDisposableDomain(domain)) {
        return { ok: false, reason: 'DISPOSABLE_DOMAIN', message: `${domain} is a disposable email domain.` };
      }
      if (!deps.checkMailServer) return { ok: true, dns: 'unavailable' };
      const mail = await deps.dns.mailServer(domain);
      if (mail === 'no') {
        return { ok: false, reason: 'NO_MAIL_SERVER', message: `${domain} has no mail server (no MX, A or AAAA record).` };
      }
      return { ok: true, dns: mail === 'yes' ? 'checked' : 'unavailable' };
    },
  };
}

export type EmailQuality = ReturnType<typeof createEmailQuality>;
