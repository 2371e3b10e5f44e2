import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, IdempotencyRecord, WebhookEndpoint } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { loadConfig } from '../../src/config.ts';
import { decryptSecret, encryptSecret, keyId } from '../../src/crypto/secret-box.ts';
import { REPO_ROOT } from '../../src/dev/paths.ts';
import { spawnService, waitFor } from '../../src/dev/processes.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { checkEncryptionKey } from '../../src/modules/encryption/encryption.service.ts';
import { createMessageBuilder } from '../../src/modules/outbound/message-builder.ts';
import { sealedSecretResponse } from '../../src/modules/webhooks/webhooks.service.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const run = promisify(execFile);
const CLI = `${REPO_ROOT}/src/cli/herald.mjs`;

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

describe('encryption keys: the start-up check, the key ring and `herald admin encryption re-encrypt`', () => {
  let stack: TestStack;
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const ring = { HERALD_ENCRYPTION_KEY: newKey.toString('base64'), HERALD_ENCRYPTION_KEYS_PREVIOUS: oldKey.toString('base64') };
  const newOnly = { HERALD_ENCRYPTION_KEY: newKey.toString('base64') };
  const plain: Record<string, string> = {};
  let domainId = '';
  let endpointId = '';
  let recordId = '';

  /** `herald <argv>` as a real process on this stack with `env` on top (undefined: unset); never rejects. */
  async function herald(argv: string[], env: Record<string, string | undefined>, timeout = 60_000): Promise<Exit> {
    const merged: NodeJS.ProcessEnv = { ...process.env, ...stack.env, ...env };
    for (const [name, value] of Object.entries(env)) if (value === undefined) delete merged[name];
    return run(process.execPath, [CLI, ...argv], { env: merged, cwd: REPO_ROOT, timeout }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );
  }

  /** `herald smtp` until it listens (the key check passed), then stopped. */
  async function smtpStarts(env: Record<string, string>): Promise<void> {
    let listening = false;
    const lines: string[] = [];
    const service = spawnService({
      name: 'smtp',
      command: process.execPath,
      args: [CLI, 'smtp'],
      env: { ...process.env, ...stack.env, LOG_LEVEL: 'info', ...env },
      onLine: (line) => {
        lines.push(line);
        if (line.includes('"msg":"smtp listening"')) listening = true;
      },
    });
    try {
      await waitFor(
        'herald smtp to listen',
        () => Promise.resolve(listening || service.child.exitCode !== null ? true : undefined),
        60_000,
      );
      expect(listening, lines.join('\n')).toBe(true);
    } finally {
      await service.stop();
    }
  }

  async function sealedValues() {
    const em = stack.orm.em.fork();
    const domain = await em.findOneOrFail(Domain, { id: domainId }, ALL_TENANTS);
    const endpoint = await em.findOneOrFail(WebhookEndpoint, { id: endpointId }, ALL_TENANTS);
    const record = await em.findOneOrFail(IdempotencyRecord, { id: recordId }, ALL_TENANTS);
    return {
      dkim: domain.dkimPrivateKeyEncrypted,
      secret: endpoint.secretEncrypted,
      previous: endpoint.previousSecretEncrypted!,
      response: (record.responseBody as { data: { secret: string } }).data.secret,
    };
  }

  beforeAll(async () => {
    stack = await createTestStack({ HERALD_ENCRYPTION_KEY: oldKey.toString('base64') });
    const { org, apiKey } = await createOrgWithKey(stack.orm);
    const domain = await createDomainsService({ orm: stack.orm, encryptionKey: oldKey }).addDomain({
      orgId: org.id,
      domain: 'keys.example.com',
      verified: true,
    });
    domainId = domain.id;
    plain.dkim = decryptSecret(
      oldKey,
      (await stack.orm.em.fork().findOneOrFail(Domain, { id: domainId }, ALL_TENANTS)).dkimPrivateKeyEncrypted,
    );
    plain.secret = 'whsec_current';
    plain.previous = 'whsec_previous';
    plain.response = 'hrld_live_revealed_once';
    const em = scopeToOrg(stack.orm.em.fork(), org.id);
    const endpoint = em.create(WebhookEndpoint, {
      orgId: org.id,
      name: 'hook',
      url: 'https://hooks.example.com/in',
      description: '',
      events: ['*'],
      enabled: true,
      secretEncrypted: encryptSecret(oldKey, plain.secret),
      previousSecretEncrypted: encryptSecret(oldKey, plain.previous),
      previousSecretExpiresAt: new Date(Date.now() + 3_600_000),
      keyMode: 'live',
      disabledReason: null,
      disabledAt: null,
    });
    const body = sealedSecretResponse([oldKey]).seal({ data: { id: 'whk', secret: plain.response } });
    const record = em.create(IdempotencyRecord, {
      orgId: org.id,
      apiKeyId: apiKey.id,
      key: 'create-hook',
      fingerprint: 'f'.repeat(64),
      state: 'completed',
      responseStatus: 201,
      responseBody: body,
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    await em.flush();
    endpointId = endpoint.id;
    recordId = record.id;
  }, 60_000);
  afterAll(() => stack.close());

  it(
    'writes the key check on the first start, then every process kind refuses another key with a message that says what to do',
    { timeout: 120_000 },
    async () => {
      await smtpStarts({});
      const stranger = randomBytes(32).toString('base64');
      const refusals = await Promise.all(
        ['api', 'worker', 'smtp', 'all'].map((kind) => herald([kind], { HERALD_ENCRYPTION_KEY: stranger })),
      );
      for (const refusal of refusals) {
        expect(refusal.code, refusal.stderr).toBe(2);
        expect(refusal.stderr).toContain(`sealed under encryption key ${keyId(oldKey)}`);
        expect(refusal.stderr).toContain(`the configured key ring is ${keyId(Buffer.from(stranger, 'base64'))}`);
        expect(refusal.stderr).toContain('Set HERALD_ENCRYPTION_KEY to the key this database was first started with');
        expect(refusal.stderr).not.toContain(stranger);
      }
      const unset = await herald(['worker'], { HERALD_ENCRYPTION_KEY: undefined });
      expect(unset.code, unset.stderr).toBe(2);
      expect(unset.stderr).toContain('HERALD_ENCRYPTION_KEY is not set');
    },
  );

  it('starts with a ring whose older key opens the old values, and seals new ones under the newest key', { timeout: 120_000 }, async () => {
    await smtpStarts(ring);
    const config = loadConfig({ ...stack.env, ...ring });
    expect(config.encryptionKeys.map(keyId)).toEqual([keyId(newKey), keyId(oldKey)]);
    const builder = createMessageBuilder({ orm: stack.orm, blobs: null, config });
    const built = await builder.build(
      {
        id: 'ring',
        domainId,
        fromEmail: 'hi@keys.example.com',
        subject: 'ring',
        text: 'hello',
        headers: {},
        attachments: [],
        messageId: 'ring@keys.example.com',
        createdAt: new Date(),
      },
      [{ email: 'someone@example.net', kind: 'to' }],
    );
    expect(built.dkim).toMatchObject({ domainName: 'keys.example.com', privateKey: plain.dkim });
    const values = await sealedValues();
    expect(decryptSecret(config.encryptionKeys, values.secret)).toBe(plain.secret);
    expect(sealedSecretResponse(config.encryptionKeys).unseal({ data: { secret: values.response } })).toEqual({
      data: { secret: plain.response },
    });
    expect(encryptSecret(config.encryptionKey!, 'x')).toContain(`enc:v2:${keyId(newKey)}:`);
  });

  it('re-encrypts every sealed value under the newest key, resumably; then the older key can go', { timeout: 120_000 }, async () => {
    const first = await herald(['admin', 'encryption', 're-encrypt', '--batch-size', '1', '--json'], ring);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      key_id: keyId(newKey),
      complete: true,
      columns: [
        { column: 'domains.dkim_private_key_encrypted', re_encrypted: 1, failed: 0 },
        { column: 'webhook_endpoints.secret_encrypted', re_encrypted: 1, failed: 0 },
        { column: 'webhook_endpoints.previous_secret_encrypted', re_encrypted: 1, failed: 0 },
        { column: 'idempotency_records.response_body', re_encrypted: 1, failed: 0 },
      ],
    });
    const again = await herald(['admin', 'encryption', 're-encrypt', '--json'], ring);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { columns: { re_encrypted: number }[] }).columns.map((c) => c.re_encrypted)).toEqual([0, 0, 0, 0]);

    const values = await sealedValues();
    for (const [name, sealed] of Object.entries(values)) expect(decryptSecret([newKey], sealed), name).toBe(plain[name]);

    const status = await herald(['admin', 'encryption', 'status', '--json'], newOnly);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ key_ids: [keyId(newKey)], checked_key_id: keyId(newKey) });
    await smtpStarts(newOnly);
    const oldOnly = await herald(['smtp'], { HERALD_ENCRYPTION_KEY: oldKey.toString('base64') });
    expect(oldOnly.code, oldOnly.stderr).toBe(2);
    expect(oldOnly.stderr).toContain(`sealed under encryption key ${keyId(newKey)}`);
  });

  it('exits 1 naming a value no key opens, and keeps the key check where it was', { timeout: 60_000 }, async () => {
    const lost = randomBytes(32);
    await stack.orm.em
      .fork()
      .nativeUpdate(WebhookEndpoint, { id: endpointId }, { secretEncrypted: encryptSecret(lost, 'whsec_lost') }, ALL_TENANTS);
    const third = randomBytes(32);
    const result = await herald(['admin', 'encryption', 're-encrypt', '--json'], {
      HERALD_ENCRYPTION_KEY: third.toString('base64'),
      HERALD_ENCRYPTION_KEYS_PREVIOUS: newKey.toString('base64'),
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(
      `webhook_endpoints.secret_encrypted ${endpointId}: sealed under encryption key ${keyId(lost)}, which is not configured`,
    );
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'unprocessable_entity' } });
    const status = await herald(['admin', 'encryption', 'status', '--json'], newOnly);
    expect(JSON.parse(status.stdout)).toMatchObject({ checked_key_id: keyId(newKey) });
  });

  it('on a database without a key check (an upgrade), refuses a ring that opens none of its sealed values and records the oldest one needed', async () => {
    const em = stack.orm.em.fork();
    await em.execute('delete from encryption_key_checks');
    await expect(checkEncryptionKey(em, [randomBytes(32)])).rejects.toThrow(
      'sealed under encryption key (unknown: a value of domains.dkim_private_key_encrypted opens with none of the configured keys)',
    );
    expect(await em.execute('select 1 from encryption_key_checks')).toEqual([]);
    // One sealed value left, under newKey: a ring holding it second records it as the key to keep.
    await em.execute('delete from webhook_endpoints where id = ?', [endpointId]);
    await em.execute('delete from idempotency_records where id = ?', [recordId]);
    await em.nativeUpdate(Domain, { id: domainId }, { dkimPrivateKeyEncrypted: encryptSecret(newKey, plain.dkim!) }, ALL_TENANTS);
    const third = randomBytes(32);
    expect(await checkEncryptionKey(em, [third, newKey])).toEqual({ checkedKeyId: keyId(newKey), olderKeyInUse: true });
  });
});
