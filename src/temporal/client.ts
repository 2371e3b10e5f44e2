import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config.ts';
import { describeTemporalAccess, temporalConnectionOptions, type TemporalAccess } from './connection-options.ts';

export interface TemporalClientHandle {
  client: Client;
  close(): Promise<void>;
}

/**
 * Opens a client connection to the configured frontend (TLS, client certificate and API key
 * from the settings); a failure says where it tried to connect and how.
 */
export async function connectTemporal(access: TemporalAccess, extra: { connectTimeout?: number } = {}): Promise<Connection> {
  try {
    return await Connection.connect({ ...temporalConnectionOptions(access), ...extra });
  } catch (error) {
    throw temporalConnectError(access, error);
  }
}

/** The error of a failed connection, naming the frontend and how it was secured. */
export function temporalConnectError(access: TemporalAccess, error: unknown): Error {
  if (error instanceof Error && error.name === 'ConfigError') return error;
  const cause = error instanceof Error ? error.message : String(error);
  // Neither SDK transport says that a handshake failed, nor why: name the usual causes.
  const hint = access.tls
    ? "; with TLS this is also how a refused handshake looks: is the frontend's certificate signed by TEMPORAL_TLS_CA_FILE (or a public root) for this host or TEMPORAL_TLS_SERVER_NAME, and does a frontend that asks for a client certificate trust TEMPORAL_TLS_CERT_FILE's?"
    : '';
  return new Error(`cannot connect to Temporal at ${access.address} (${describeTemporalAccess(access)}): ${cause}${hint}`, {
    cause: error,
  });
}

/** Connects a Temporal client to the configured frontend and namespace. */
export async function connectTemporalClient(config: Pick<Config, 'temporal'>): Promise<TemporalClientHandle> {
  const connection = await connectTemporal(config.temporal);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return {
    client,
    close: () => connection.close(),
  };
}

/**
 * A client whose connection opens on first use: the api process starts (and serves everything
 * that does not need Temporal) while Temporal is still coming up or briefly unavailable. The
 * TLS files are read now, so a bad one stops the process at start.
 */
export function lazyTemporalClient(config: Pick<Config, 'temporal'>): TemporalClientHandle {
  const connection = Connection.lazy(temporalConnectionOptions(config.temporal));
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return {
    client,
    close: () => connection.close(),
  };
}
