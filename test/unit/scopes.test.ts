import { describe, expect, it } from 'vitest';
import { PUBLIC_SCOPES, resolveGrantableScopes, SCOPE_CATALOG } from '../../src/modules/auth/scopes.ts';

/** The spec's Scopes table, in its order. */
const SPEC_SCOPES = [
  'me:read',
  'domains:read',
  'inbox.threads:read',
  'inbox.threads:write',
  'outbox.broadcasts:read',
  'outbox.broadcasts:write',
  'outbox.broadcasts:send',
  'outbox.transactional:send',
  'contacts:read',
  'contacts:write',
  'segments:read',
  'segments:write',
  'webhooks:read',
  'webhooks:write',
  'webhooks:admin',
  'api_keys:read',
  'api_keys:write',
  'automations:read',
  'automations:write',
  'templates:read',
  'templates:write',
  'metrics:read',
];

describe('scope catalog', () => {
  it("holds every scope of the spec as public, in order, then Herald's own", () => {
    expect(PUBLIC_SCOPES).toEqual([...SPEC_SCOPES, 'events:write', 'domains:write']);
  });

  it('holds the three gated assistant scopes', () => {
    expect(SCOPE_CATALOG.filter((s) => s.launch === 'gated').map((s) => s.id)).toEqual([
      'assistant.chat:write',
      'assistant.tools:read',
      'assistant.sessions:read',
    ]);
  });

  it('splits ids into domain and access', () => {
    expect(SCOPE_CATALOG.find((s) => s.id === 'inbox.threads:read')).toMatchObject({
      domain: 'inbox.threads',
      access: 'read',
    });
  });

  it('grants "all" as every public scope and refuses gated or unknown scopes', () => {
    expect(resolveGrantableScopes(['all'])).toEqual({ ok: true, scopes: [...PUBLIC_SCOPES] });
    expect(resolveGrantableScopes(['me:read', 'me:read'])).toEqual({ ok: true, scopes: ['me:read'] });
    expect(resolveGrantableScopes(['assistant.chat:write'])).toEqual({ ok: false, unknown: [], gated: ['assistant.chat:write'] });
    expect(resolveGrantableScopes(['me:write'])).toEqual({ ok: false, unknown: ['me:write'], gated: [] });
    expect(resolveGrantableScopes([])).toMatchObject({ ok: false });
  });
});
