/**
 * The destination a message's recipients share a budget with (per-destination shaping): the
 * provider behind the domain's MX hosts, not the domain. gmail.com and googlemail.com (and every
 * Google Workspace domain) have their MX at google.com, so they are one destination, as they are
 * one receiver with one view of the sender's reputation.
 */

/** Big providers, by a suffix of their MX host names: one budget each, whatever the domain. */
const PROVIDERS: readonly (readonly [suffix: string, provider: string])[] = [
  ['google.com', 'google'],
  ['googlemail.com', 'google'],
  ['outlook.com', 'microsoft'],
  ['hotmail.com', 'microsoft'],
  ['yahoodns.net', 'yahoo'],
  ['yahoo.com', 'yahoo'],
  ['aol.com', 'yahoo'],
  ['icloud.com', 'apple'],
  ['me.com', 'apple'],
  ['mimecast.com', 'mimecast'],
  ['pphosted.com', 'proofpoint'],
  ['ppe-hosted.com', 'proofpoint'],
  ['messagingengine.com', 'fastmail'],
  ['zoho.com', 'zoho'],
  ['zoho.eu', 'zoho'],
  ['yandex.net', 'yandex'],
  ['yandex.ru', 'yandex'],
  ['mail.ru', 'mailru'],
  ['gmx.net', 'united-internet'],
  ['web.de', 'united-internet'],
  ['1and1.com', 'united-internet'],
  ['ionos.com', 'united-internet'],
  ['comcast.net', 'comcast'],
  ['protonmail.ch', 'proton'],
  ['barracudanetworks.com', 'barracuda'],
];

/**
 * Second-level labels under which names are registered one level deeper (`example.co.uk`):
 * a small subset of the public suffix list, enough for the MX host names seen in practice.
 */
const SECOND_LEVEL = new Set(['co', 'com', 'net', 'org', 'ac', 'gov', 'edu', 'ne', 'or', 'go', 'gv', 'ltd', 'plc', 'nom', 'gob']);

/** The registrable part of a host name: `mx1.mail.example.co.uk` → `example.co.uk`. */
export function registrableSuffix(host: string): string {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.').filter(Boolean);
  if (labels.length <= 2) return labels.join('.');
  const [secondLevel, topLevel] = labels.slice(-2);
  const deeper = topLevel!.length === 2 && SECOND_LEVEL.has(secondLevel!);
  return labels.slice(deeper ? -3 : -2).join('.');
}

/** The provider table's name for one MX host, or null. */
function providerOf(host: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, '');
  for (const [suffix, provider] of PROVIDERS) if (name === suffix || name.endsWith(`.${suffix}`)) return provider;
  return null;
}

/**
 * The rollup key of a destination from its MX host names (in preference order): the provider
 * of the first host the table knows, else the registrable suffix of the most preferred host.
 * An IP literal (a test's or a private network's host) is its own destination.
 */
export function rollupKeyOf(mxHosts: readonly string[]): string {
  for (const host of mxHosts) {
    const provider = providerOf(host);
    if (provider) return provider;
  }
  const first = mxHosts[0]?.toLowerCase() ?? '';
  if (/^[\d.]+$/.test(first) || first.includes(':')) return first;
  return registrableSuffix(first);
}
