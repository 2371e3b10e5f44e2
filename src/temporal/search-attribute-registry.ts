import type { ConnectionLike } from '@temporalio/client';
import { isGrpcServiceError } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { SearchAttributeMode } from '../settings/temporal-tls.ts';
import { connectTemporal } from './client.ts';
import type { TemporalAccess } from './connection-options.ts';
import { HERALD_SEARCH_ATTRIBUTES, searchAttributeCliType } from './search-attributes.ts';

/** The two services the checks call (a client's or a worker's connection). */
type TemporalServices = Pick<ConnectionLike, 'workflowService' | 'operatorService'>;

const { IndexedValueType } = proto.temporal.api.enums.v1;
const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;

/**
 * What the cluster lacks for Herald, with the operator's commands that fix it: the worker stops
 * with this rather than start workflows the cluster would refuse.
 */
export class TemporalSetupError extends Error {
  readonly commands: string[];
  constructor(problem: string, commands: string[]) {
    super(
      `${problem}\nRun, then start again (on Temporal Cloud do the same in the Cloud UI or with tcld, docs/temporal.md):\n  ${commands.join('\n  ')}`,
    );
    this.name = 'TemporalSetupError';
    this.commands = commands;
  }
}

const indexedType = (type: SearchAttributeType) => IndexedValueType[`INDEXED_VALUE_TYPE_${type}`];
const createCommand = (namespace: string, key: (typeof HERALD_SEARCH_ATTRIBUTES)[number]) =>
  `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${searchAttributeCliType(key.type)}`;

async function requireNamespace(connection: TemporalServices, namespace: string): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (error) {
    if (!isGrpcServiceError(error) || Number(error.code) !== GRPC_NOT_FOUND) throw error;
    throw new TemporalSetupError(`the Temporal namespace "${namespace}" does not exist (TEMPORAL_NAMESPACE).`, [
      `temporal operator namespace create --namespace ${namespace} --retention 3d`,
    ]);
  }
}

async function listCustomAttributes(
  connection: TemporalServices,
  namespace: string,
): Promise<Record<string, proto.temporal.api.enums.v1.IndexedValueType>> {
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    return listed.customAttributes ?? {};
  } catch (error) {
    throw new TemporalSetupError(
      `cannot list the search attributes of "${namespace}" (${(error as Error).message}). Create them yourself, then set TEMPORAL_SEARCH_ATTRIBUTES=off:`,
      HERALD_SEARCH_ATTRIBUTES.map((key) => createCommand(namespace, key)),
    );
  }
}

/**
 * Makes sure Herald can run on `namespace`: it exists, and (unless `mode` is `off`) Herald's
 * search attributes are registered with their types. `register` adds missing ones when the
 * cluster allows it; `check` never changes the cluster. Anything left to do throws a
 * TemporalSetupError with the exact commands. Returns the attributes it registered.
 */
export async function prepareTemporalNamespace(
  connection: TemporalServices,
  options: { namespace: string; mode: SearchAttributeMode },
): Promise<string[]> {
  const { namespace, mode } = options;
  await requireNamespace(connection, namespace);
  if (mode === 'off') return [];
  const existing = await listCustomAttributes(connection, namespace);
  const wrongType = HERALD_SEARCH_ATTRIBUTES.filter((key) => key.name in existing && existing[key.name] !== indexedType(key.type));
  if (wrongType.length > 0) {
    throw new TemporalSetupError(
      `search attributes of "${namespace}" have the wrong type: ${wrongType.map((key) => `${key.name} is not ${searchAttributeCliType(key.type)}`).join(', ')}. Remove them (filters on them stop working until they are created again):`,
      wrongType.flatMap((key) => [
        `temporal operator search-attribute remove --namespace ${namespace} --name ${key.name}`,
        createCommand(namespace, key),
      ]),
    );
  }
  const missing = HERALD_SEARCH_ATTRIBUTES.filter((key) => !(key.name in existing));
  if (missing.length === 0) return [];
  const commands = missing.map((key) => createCommand(namespace, key));
  const names = missing.map((key) => key.name).join(', ');
  if (mode === 'check') {
    throw new TemporalSetupError(
      `Herald's search attributes ${names} are missing from "${namespace}" (TEMPORAL_SEARCH_ATTRIBUTES=check).`,
      commands,
    );
  }
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedType(key.type)])),
    });
  } catch (error) {
    // Another process registered them first: look again, without registering.
    if (isGrpcServiceError(error) && Number(error.code) === GRPC_ALREADY_EXISTS)
      return prepareTemporalNamespace(connection, { namespace, mode: 'check' });
    throw new TemporalSetupError(
      `the cluster refused to register Herald's search attributes ${names} on "${namespace}" (${(error as Error).message}).`,
      commands,
    );
  }
  return missing.map((key) => key.name);
}

/** Throws until the server answers for `namespace`; then registers Herald's search attributes (the dev stack). */
export async function ensureTemporalReady(access: TemporalAccess, namespace: string): Promise<void> {
  const connection = await connectTemporal(access, { connectTimeout: 1000 });
  try {
    await prepareTemporalNamespace(connection, { namespace, mode: 'register' });
  } finally {
    await connection.close();
  }
}
