import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { connectTemporal } from '../../src/temporal/client.ts';
import { prepareTemporalNamespace, TemporalSetupError } from '../../src/temporal/search-attribute-registry.ts';
import { startWorker } from '../../src/worker.ts';
import { createTestStack, sharedServices } from '../support/stack.ts';

const { IndexedValueType } = proto.temporal.api.enums.v1;

/**
 * The worker's start-up check of its namespace and Herald's search attributes, against the
 * dev server with namespaces made for each case (TEMPORAL_SEARCH_ATTRIBUTES: register, check, off).
 */
describe('prepareTemporalNamespace', () => {
  let connection: Connection;

  /** A new, empty namespace on the dev server, once it answers. */
  async function freshNamespace(): Promise<string> {
    const namespace = `herald-ns-${randomBytes(4).toString('hex')}`;
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    await waitFor(`namespace ${namespace}`, () => connection.workflowService.describeNamespace({ namespace }).then(() => true), 30_000);
    return namespace;
  }

  async function setupError(namespace: string, mode: 'register' | 'check'): Promise<TemporalSetupError> {
    const error = await prepareTemporalNamespace(connection, { namespace, mode }).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(error, 'expected a TemporalSetupError').toBeInstanceOf(TemporalSetupError);
    return error as TemporalSetupError;
  }

  beforeAll(async () => {
    connection = await connectTemporal({ address: sharedServices().temporalAddress, tls: null });
  });

  afterAll(async () => {
    await connection?.close();
  });

  it('stops on a namespace that does not exist, with the command that creates it', async () => {
    const error = await setupError('herald-nowhere', 'register');
    expect(error.message).toContain('the Temporal namespace "herald-nowhere" does not exist (TEMPORAL_NAMESPACE)');
    expect(error.commands).toEqual(['temporal operator namespace create --namespace herald-nowhere --retention 3d']);
  });

  it('check: stops on missing search attributes with one create command each, and changes nothing', async () => {
    const namespace = await freshNamespace();
    const error = await setupError(namespace, 'check');
    expect(error.message).toContain('are missing');
    expect(error.commands).toEqual(
      ['HeraldOrgId', 'HeraldKind', 'HeraldRecipientDomain', 'HeraldDeliveryStatus'].map(
        (name) => `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type Keyword`,
      ),
    );
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    expect(Object.keys(listed.customAttributes ?? {}).filter((name) => name.startsWith('Herald'))).toEqual([]);
  });

  it('register: registers the missing ones as Keyword, after which check passes and nothing is registered twice', async () => {
    const namespace = await freshNamespace();
    expect(await prepareTemporalNamespace(connection, { namespace, mode: 'register' })).toEqual([
      'HeraldOrgId',
      'HeraldKind',
      'HeraldRecipientDomain',
      'HeraldDeliveryStatus',
    ]);
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    expect(listed.customAttributes).toMatchObject({ HeraldOrgId: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD });
    expect(await prepareTemporalNamespace(connection, { namespace, mode: 'check' })).toEqual([]);
    expect(await prepareTemporalNamespace(connection, { namespace, mode: 'register' })).toEqual([]);
  });

  it('stops on an attribute of the wrong type in either mode, with the commands that replace it', async () => {
    const namespace = await freshNamespace();
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { HeraldKind: IndexedValueType.INDEXED_VALUE_TYPE_TEXT },
    });
    for (const mode of ['register', 'check'] as const) {
      const error = await setupError(namespace, mode);
      expect(error.message).toContain('HeraldKind is not Keyword');
      expect(error.commands).toEqual([
        `temporal operator search-attribute remove --namespace ${namespace} --name HeraldKind`,
        `temporal operator search-attribute create --namespace ${namespace} --name HeraldKind --type Keyword`,
      ]);
    }
  });

  it('off: checks only that the namespace exists', async () => {
    const namespace = await freshNamespace();
    expect(await prepareTemporalNamespace(connection, { namespace, mode: 'off' })).toEqual([]);
    await expect(prepareTemporalNamespace(connection, { namespace: 'herald-nowhere', mode: 'off' })).rejects.toThrow(TemporalSetupError);
  });

  it("the worker stops at start with the commands when its namespace lacks Herald's search attributes (check)", async () => {
    const namespace = await freshNamespace();
    const stack = await createTestStack({ TEMPORAL_NAMESPACE: namespace, TEMPORAL_SEARCH_ATTRIBUTES: 'check' });
    try {
      await expect(startWorker(stack.config, createLogger('silent'), { orm: stack.orm })).rejects.toThrow(
        `temporal operator search-attribute create --namespace ${namespace} --name HeraldOrgId --type Keyword`,
      );
    } finally {
      await stack.close();
    }
  });
});
