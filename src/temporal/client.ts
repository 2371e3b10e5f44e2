import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
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

/** Its message and its causes' messages, outermost first, without repeats. */
function causeChain(error: unknown): { messages: string[]; grpcCode: number | undefined } {
  const messages: string[] = [];
  let grpcCode: number | undefined;
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    if (!messages.includes(current.message)) messages.push(current.message);
    if (grpcCode === undefined && isGrpcServiceError(current)) grpcCode = current.code;
  }
  if (messages.length === 0) messages.push(String(error));
  return { messages, grpcCode };
}

const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNAUTHENTICATED = 16;

/** The error of a failed connection, naming the frontend, how it was secured and the likely cause. */
export function temporalConnectError(access: TemporalAccess, error: unknown): Error {
  if (error instanceof Error && error.name === 'ConfigError') return error;
  const { messages, grpcCode } = causeChain(error);
  // Neither SDK transport says that a handshake failed, nor why: name the usual causes.
  let hint = '';
  if (grpcCode === GRPC_UNAUTHENTICATED || grpcCode === GRPC_PERMISSION_DENIED) {
    hint =
      '; the frontend refused the credentials: check TEMPORAL_API_KEY or the client certificate, and their access to TEMPORAL_NAMESPACE';
  } else if (access.tls) {
    hint =
      "; with TLS this is also how a refused handshake looks: is the frontend's certificate signed by TEMPORAL_TLS_CA_FILE (or a public root) for this host or TEMPORAL_TLS_SERVER_NAME, and does a frontend that asks for a client certificate trust TEMPORAL_TLS_CERT_FILE's?";
  }
  const message = `cannot connect to Temporal at ${access.address} (${describeTemporalAccess(access)}): ${messages.join(': ')}${hint}`;
  return new Error(message, { cause: error });
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
