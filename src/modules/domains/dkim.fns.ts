import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);

/** A fresh 2048-bit RSA DKIM key pair (PEM) and the public key's DNS TXT value. */
export async function generateDkimKeyPair(): Promise<{
  privateKeyPem: string;
  publicKeyPem: string;
  dnsValue: string;
}> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey, dnsValue: dkimDnsValue(publicKey) };
}

/** The base64 body of a PEM public key: the `p=` tag of the DKIM record. */
export function dkimPublicKeyData(publicKeyPem: string): string {
  return publicKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
}

/** The DNS TXT value that publishes a DKIM public key (RFC 6376 key record). */
export function dkimDnsValue(publicKeyPem: string): string {
  return `v=DKIM1; k=rsa; p=${dkimPublicKeyData(publicKeyPem)}`;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Lower-cases and checks a domain name (at least two labels, LDH rules). */
export function normalizeDomainName(input: string): string | null {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  if (domain.length === 0 || domain.length > 253) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return null;
  return domain;
}
