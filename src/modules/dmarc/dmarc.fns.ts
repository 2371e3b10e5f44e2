/** The report address's local part when a domain has not chosen another: `dmarc@<domain>`. */
export const DEFAULT_REPORT_LOCAL_PART = 'dmarc';

/**
 * A local part Herald accepts for a report address: lowercase dot-atom characters, as a
 * reporter's `mailto:` URI carries them without escaping (RFC 7489 §6.4 separates URIs with
 * commas and `!` sizes, so neither may appear).
 */
export const REPORT_LOCAL_PART = /^[a-z0-9](?:[a-z0-9._+-]{0,62}[a-z0-9])?$/;

/** The address a domain's reports go to. */
export function reportAddress(domain: string, localPart: string | null | undefined): string {
  return `${localPart ?? DEFAULT_REPORT_LOCAL_PART}@${domain}`;
}

/** The tag to add to the domain's `_dmarc` TXT record so receivers send their reports to Herald. */
export function ruaTag(domain: string, localPart: string | null | undefined): string {
  return `rua=mailto:${reportAddress(domain, localPart)}`;
}

/** How far back the per-source sums look when the caller does not say. */
export const DEFAULT_SOURCES_WINDOW_DAYS = 30;
