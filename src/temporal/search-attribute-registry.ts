import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { HERALD_SEARCH_ATTRIBUTES } from './search-attributes.ts';

/**
 * Registers Herald's search attributes on a namespace; already-registered ones are skipped.
 * The dev server only applies `--search-attribute` when it creates a namespace, so a
 * persisted dev database needs this on every start.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = HERALD_SEARCH_ATTRIBUTES.filter((key) => !known.has(key.name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((key) => [key.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return missing.map((key) => key.name);
}

/** Throws until the server at `address` answers for `namespace`; then registers Herald's search attributes. */
export async function ensureTemporalReady(address: string, namespace: string): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  const connection = await Connection.connect({ address, connectTimeout: 1000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
    await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
}
