import { describeApiKey } from '../describe.ts';
import { type CommandGroup, integer, json, required, table, UsageError } from './options.ts';

/** Access: dashboard invitations and sign-in links, API keys. */
export const accessCommands: CommandGroup = (svc) => ({
  invite: {
    usage: 'invite --org ID --email E [--role owner|member]',
    options: { ...json, org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
    async run(values) {
      const role = values.role ?? 'member';
      if (role !== 'owner' && role !== 'member') throw new UsageError('--role must be owner or member');
      const services = svc();
      const { token, invite } = await services.dashboard.invite({
        orgId: required(values, 'org'),
        email: required(values, 'email'),
        role,
      });
      const url = `${services.publicUrl}/dashboard/invite/${token}`;
      return {
        json: {
          invite_id: invite.id,
          org_id: invite.orgId,
          email: invite.email,
          role: invite.role,
          url,
          expires_at: invite.expiresAt.toISOString(),
        },
        text: `invitation for ${invite.email} (${invite.role}), valid until ${invite.expiresAt.toISOString()}:\n${url}`,
      };
    },
  },
  'sign-in-link': {
    usage: 'sign-in-link --org ID [--email E]   (one use, 15 minutes; the owner when no email)',
    options: { ...json, org: { type: 'string' }, email: { type: 'string' } },
    async run(values) {
      const services = svc();
      const { token, link } = await services.dashboard.signInLink({
        orgId: required(values, 'org'),
        ...(typeof values.email === 'string' ? { email: values.email } : {}),
      });
      const url = `${services.publicUrl}/dashboard/sign-in/${token}`;
      return {
        json: { org_id: link.orgId, email: link.email, url, expires_at: link.expiresAt.toISOString() },
        text: `sign-in link for ${link.email}, valid until ${link.expiresAt.toISOString()}:\n${url}`,
      };
    },
  },
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
