import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { ConfigError, type Config } from '../config.ts';

/** What a Temporal connection is built from: the frontend, its TLS and Temporal Cloud's API key. */
export type TemporalAccess = Pick<Config['temporal'], 'address' | 'tls' | 'apiKey'>;

/**
 * The options every Temporal connection Herald makes is opened with, the client's
 * (`Connection`) and the worker's (`NativeConnection`) alike, so they cannot disagree. The TLS
 * files are read here, when a process connects: a file that is missing, unreadable, not PEM, or
 * a key that does not match its certificate stops the process with the setting's name.
 */
export function temporalConnectionOptions(access: TemporalAccess): { address: string; tls?: TLSConfig; apiKey?: string } {
  const apiKey = access.apiKey ? { apiKey: access.apiKey } : {};
  if (!access.tls) return { address: access.address, ...apiKey };
  const { caFile, client, serverName } = access.tls;
  const tls: TLSConfig = {
    ...(caFile ? { serverRootCACertificate: readCertificate(caFile, 'TEMPORAL_TLS_CA_FILE') } : {}),
    ...(client ? { clientCertPair: readClientPair(client.certFile, client.keyFile) } : {}),
    ...(serverName ? { serverNameOverride: serverName } : {}),
  };
  return { address: access.address, tls, ...apiKey };
}

/** How a connection is secured, for logs and error messages (never a secret). */
export function describeTemporalAccess(access: TemporalAccess): string {
  if (!access.tls) return access.apiKey ? 'TLS, API key' : 'plaintext';
  const parts = [access.tls.caFile ? `TLS (CA ${access.tls.caFile})` : 'TLS (system roots)'];
  if (access.tls.client) parts.push(`client certificate ${access.tls.client.certFile}`);
  if (access.tls.serverName) parts.push(`server name ${access.tls.serverName}`);
  if (access.apiKey) parts.push('API key');
  return parts.join(', ');
}

function readSettingFile(file: string, setting: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError([`${setting}: cannot read ${file}: ${(error as Error).message}`]);
  }
}

function readCertificate(file: string, setting: string): Buffer {
  const pem = readSettingFile(file, setting);
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError([`${setting}: ${file} holds no PEM certificate`]);
  }
  return pem;
}

function readClientPair(certFile: string, keyFile: string): { crt: Buffer; key: Buffer } {
  const crt = readCertificate(certFile, 'TEMPORAL_TLS_CERT_FILE');
  const key = readSettingFile(keyFile, 'TEMPORAL_TLS_KEY_FILE');
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new ConfigError([`TEMPORAL_TLS_KEY_FILE: ${keyFile} holds no PEM private key (an unencrypted one is needed)`]);
  }
  if (!new X509Certificate(crt).checkPrivateKey(privateKey)) {
    throw new ConfigError([`TEMPORAL_TLS_KEY_FILE: ${keyFile} is not the key of the certificate in TEMPORAL_TLS_CERT_FILE (${certFile})`]);
  }
  return { crt, key };
}
