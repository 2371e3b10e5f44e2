/**
 * Whether a message gets an open pixel and tracked links, and where they point. One function
 * decides for every kind of email, from the message's own setting and a default the caller
 * picks (transactional: off, as Postmark does; broadcasts and automation emails: on); a
 * per-stream default plugs in as that default.
 */

export interface TrackingChoice {
  opens: boolean;
  clicks: boolean;
}

/** What a send, a broadcast launch or an automation step may say: both switches, one of them, or a plain boolean for both. */
export type TrackingSetting = boolean | { opens?: boolean | undefined; clicks?: boolean | undefined } | null | undefined;

export const TRANSACTIONAL_TRACKING: TrackingChoice = Object.freeze({ opens: false, clicks: false });
export const BULK_TRACKING: TrackingChoice = Object.freeze({ opens: true, clicks: true });

/** The message's setting where it says something, the default where it is silent. */
export function decideTracking(setting: TrackingSetting, fallback: TrackingChoice): TrackingChoice {
  if (setting === null || setting === undefined) return { ...fallback };
  if (typeof setting === 'boolean') return { opens: setting, clicks: setting };
  return { opens: setting.opens ?? fallback.opens, clicks: setting.clicks ?? fallback.clicks };
}

/** The entity columns of a choice (transactional_emails, broadcasts). */
export function trackingColumns(choice: TrackingChoice): { trackOpens: boolean; trackClicks: boolean } {
  return { trackOpens: choice.opens, trackClicks: choice.clicks };
}

/** A DNS label run: letters, digits, hyphens inside, at least two labels, 253 characters in all. */
const HOST = /^(?=.{4,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/** The host as stored: lower case, without a trailing dot. */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}

/** Why `host` cannot be domain `domain`'s tracking host, or null when it can: a subdomain of it, not the domain itself. */
export function trackingHostProblem(host: string, domain: string): string | null {
  if (!HOST.test(host)) return 'must be a host name such as track.example.com';
  if (!host.endsWith(`.${domain.toLowerCase()}`)) return `must be a subdomain of ${domain}`;
  return null;
}

/** Where a verified tracking host's links go: PUBLIC_URL's scheme and port on the custom host. */
export function trackingBase(publicUrl: string, host: string | null): string {
  if (!host) return publicUrl;
  const url = new URL(publicUrl);
  return `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`;
}

/** Whether a CNAME answer points at Herald's tracking host. */
export function cnameMatches(found: string | null, target: string): boolean {
  return found !== null && normalizeHost(found) === normalizeHost(target);
}

/** Requests for Herald's own host: PUBLIC_URL's name, an IP literal or localhost (direct access, probes). */
export function isOwnHost(hostname: string, publicUrl: string): boolean {
  const name = normalizeHost(hostname);
  return name === new URL(publicUrl).hostname.toLowerCase() || name === 'localhost' || /^[\d.]+$/.test(name) || name.includes(':');
}
