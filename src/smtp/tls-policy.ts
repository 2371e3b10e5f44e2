import { isIP } from 'node:net';

/**
 * How an outbound SMTP client treats TLS with the server it hands mail to. The vocabulary is the
 * relay's today (SMTP_RELAY_TLS) and is meant for direct-to-MX delivery too:
 * - `opportunistic`: encrypt when the server offers STARTTLS, accept whatever certificate it
 *   shows (RFC 7435; Postfix's `smtp_tls_security_level = may`);
 * - `verify`: TLS is required and the certificate must be valid for the server's host name;
 * - `none`: never upgrade (plaintext only).
 */
export const SMTP_TLS_POLICIES = ['opportunistic', 'verify', 'none'] as const;
export type SmtpTlsPolicy = (typeof SMTP_TLS_POLICIES)[number];

/** What chose the relay's policy: a setting, or the default rule for this relay URL. */
export type RelayTlsSource = 'SMTP_RELAY_TLS' | 'SMTP_RELAY_CA_FILE' | 'smtps' | 'loopback' | 'host';

export interface RelayTlsSettings {
  policy: SmtpTlsPolicy;
  source: RelayTlsSource;
  /** PEM file of extra certificate authorities trusted under `verify` (SMTP_RELAY_CA_FILE). */
  caFile?: string;
}

const SOURCE_NOTES: Record<RelayTlsSource, string> = {
  SMTP_RELAY_TLS: 'SMTP_RELAY_TLS',
  SMTP_RELAY_CA_FILE: 'SMTP_RELAY_CA_FILE is set',
  smtps: 'default for smtps://',
  loopback: 'default for a relay on loopback',
  host: 'default for a relay that is not on loopback',
};

/** Whether a URL host name is this machine: `localhost`, `*.localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^::ffff:7f[0-9a-f]{2}:/.test(host);
  return false;
}

/**
 * The relay's TLS policy from SMTP_RELAY_URL, SMTP_RELAY_TLS and SMTP_RELAY_CA_FILE, or the
 * problem found. Unset, the policy is `verify` when a CA file is given or the URL is
 * `smtps://`, `opportunistic` for a relay on loopback (a local Postfix with its self-signed
 * certificate), and `verify` for any other host.
 */
export function resolveRelayTls(input: { url: string; policy?: SmtpTlsPolicy; caFile?: string }): RelayTlsSettings | string {
  const url = new URL(input.url);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    return `SMTP_RELAY_URL: must start with smtp:// or smtps:// (not ${url.protocol}//)`;
  const implicitTls = url.protocol === 'smtps:';
  const ca = input.caFile ? { caFile: input.caFile } : {};
  if (input.policy) {
    if (implicitTls && input.policy === 'none')
      return 'SMTP_RELAY_TLS: none cannot apply to smtps:// (TLS from the first byte); use smtp://';
    if (input.caFile && input.policy !== 'verify') return `SMTP_RELAY_CA_FILE: only used with SMTP_RELAY_TLS=verify (not ${input.policy})`;
    return { policy: input.policy, source: 'SMTP_RELAY_TLS', ...ca };
  }
  if (input.caFile) return { policy: 'verify', source: 'SMTP_RELAY_CA_FILE', ...ca };
  if (implicitTls) return { policy: 'verify', source: 'smtps' };
  if (isLoopbackHost(url.hostname)) return { policy: 'opportunistic', source: 'loopback' };
  return { policy: 'verify', source: 'host' };
}

/** One line for the start banner and the worker's log: `verify (default for smtps://)`. */
export function describeRelayTls(settings: RelayTlsSettings): string {
  const ca = settings.caFile ? `, trusting ${settings.caFile}` : '';
  return `${settings.policy} (${SOURCE_NOTES[settings.source]}${ca})`;
}
