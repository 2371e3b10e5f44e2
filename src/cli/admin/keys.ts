import { describeApiKey } from '../describe.ts';
import { type CommandGroup, integer, json, required, table, UsageError } from './options.ts';

/** API keys: create, revoke, list. */
export const keyCommands: CommandGroup = (svc) => ({
  'key create': {
    usage: 'key create --org ID --scopes LIST|all [--mode live|test] [--name N] [--rate-limit-per-minute N] [--burst N]',
    options: {
      ...json,
      org: { type: 'string' },
      scopes: { type: 'string' },
      mode: { type: 'string' },
      name: { type: 'string' },
      'rate-limit-per-minute': { type: 'string' },
      burst: { type: 'string' },
    },
    async run(values) {
      const mode = values.mode ?? 'test';
      if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test');
      const scopes = required(values, 'scopes')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const perMinute = integer(values, 'rate-limit-per-minute');
      const burst = integer(values, 'burst');
      const { apiKey, key } = await svc().keys.createApiKey({
        orgId: required(values, 'org'),
        scopes,
        mode,
        ...(typeof values.name === 'string' ? { name: values.name } : {}),
        ...(perMinute !== undefined ? { rateLimitPerMinute: perMinute } : {}),
        ...(burst !== undefined ? { burst } : {}),
      });
      return {
        json: { ...describeApiKey(apiKey), key },
        text: `created key ${apiKey.id}\n${key}\n(the secret is shown once; store it now)`,
      };
    },
  },
  'key revoke': {
    usage: 'key revoke ID',
    options: { ...json },
    positionals: 1,
    async run(_values, [id]) {
      const apiKey = await svc().keys.revokeApiKey(id!);
      return { json: describeApiKey(apiKey), text: `revoked key ${apiKey.id}` };
    },
  },
  'key list': {
    usage: 'key list [--org ID]',
    options: { ...json, org: { type: 'string' } },
    async run(values) {
      const rows = (await svc().keys.listApiKeys(values.org as string | undefined)).map(describeApiKey);
      return { json: { data: rows }, text: table(rows, ['id', 'org_id', 'prefix', 'mode', 'name', 'revoked_at']) };
    },
  },
});
