import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config.ts';

export interface TemporalClientHandle {
  client: Client;
  close(): Promise<void>;
}

/** Connects a Temporal client to the configured frontend and namespace. */
export async function connectTemporalClient(config: Pick<Config, 'temporal'>): Promise<TemporalClientHandle> {
  const connection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return {
    client,
    close: () => connection.close(),
  };
}

/**
 * A client whose connection opens on first use: the api process starts (and serves everything
 * that does not need Temporal) while Temporal is still coming up or briefly unavailable.
 */
export function lazyTemporalClient(config: Pick<Config, 'temporal'>): TemporalClientHandle {
  const connection = Connection.lazy({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return {
    client,
    close: () => connection.close(),
  };
}
