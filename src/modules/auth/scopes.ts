/**
 * The scope catalog: every scope of the spec's Scopes table (launch `public`), then Herald's own
 * public scopes (`events:write`, for POST /events; `domains:write`, for a domain's settings; `streams:read`/`streams:write`, for
 * /streams), and the gated assistant scopes (launch
 * `gated`, never grantable to public_api keys).
 */
export interface ScopeEntry {
  id: string;
  domain: string;
  access: string;
  launch: 'public' | 'gated';
  description: string;
}

const entry = (id: string, launch: ScopeEntry['launch'], description: string): ScopeEntry => {
  const [domain = id, access = ''] = id.split(':');
  return { id, domain, access, launch, description };
};

export const SCOPE_CATALOG: readonly ScopeEntry[] = [
  entry('me:read', 'public', 'Inspect the current key, org, scopes, rate-limit profile'),
  entry('domains:read', 'public', 'Read verified sending domains and sender identities'),
  entry('inbox.threads:read', 'public', 'Read threads, messages, delivery events'),
  entry('inbox.threads:write', 'public', 'Update thread/message state (read, starred, archived, tags)'),
  entry('outbox.broadcasts:read', 'public', 'Read broadcasts, drafts, schedules, send status'),
  entry('outbox.broadcasts:write', 'public', 'Create and update broadcast drafts and schedules'),
  entry('outbox.broadcasts:send', 'public', 'Launch or cancel broadcast sends'),
  entry(
    'outbox.transactional:send',
    'public',
    'Send transactional emails via API or SMTP; separate from broadcast send so an SMTP-only key cannot launch a broadcast',
  ),
  entry('contacts:read', 'public', 'Read contacts'),
  entry('contacts:write', 'public', 'Create, update, import, export, delete contacts'),
  entry('segments:read', 'public', 'Read segments, groups, membership lists'),
  entry('segments:write', 'public', 'Create/update segments, manage membership'),
  entry('webhooks:read', 'public', 'Read webhook endpoints and delivery status'),
  entry('webhooks:write', 'public', 'Create and update webhook endpoints'),
  entry('webhooks:admin', 'public', 'Delete webhooks, rotate secrets, replay deliveries'),
  entry('api_keys:read', 'public', 'Read API key metadata'),
  entry('api_keys:write', 'public', 'Create and revoke API keys'),
  entry('automations:read', 'public', 'Read automations and run history'),
  entry('automations:write', 'public', 'Update name, description, status; delete automations'),
  entry('templates:read', 'public', 'Read templates'),
  entry('templates:write', 'public', 'Create, update, delete templates'),
  entry('metrics:read', 'public', 'Read metrics summaries'),
  entry('events:write', 'public', "Record contacts' custom events, which start and resume automations (Herald extension)"),
  entry(
    'domains:write',
    'public',
    "Change a domain's settings (egress IP pool, DMARC report address, warm-up, tracking host) and the warm-up plan (Herald extension)",
  ),
  entry('streams:read', 'public', 'Read message streams and their budgets (Herald extension)'),
  entry('streams:write', 'public', 'Create, update and delete message streams (Herald extension)'),
  entry('assistant.chat:write', 'gated', 'Assistant chat (admin-approved organisations, portal only)'),
  entry('assistant.tools:read', 'gated', 'Assistant tools (admin-approved organisations, portal only)'),
  entry('assistant.sessions:read', 'gated', 'Assistant sessions (admin-approved organisations, portal only)'),
];

export const PUBLIC_SCOPES: readonly string[] = SCOPE_CATALOG.filter((scope) => scope.launch === 'public').map((scope) => scope.id);

const KNOWN = new Map(SCOPE_CATALOG.map((scope) => [scope.id, scope]));

export type ScopeCheck = { ok: true; scopes: string[] } | { ok: false; unknown: string[]; gated: string[] };

/**
 * Resolves a requested scope list for a public_api key: `all` means every public scope;
 * unknown and gated scopes are refused.
 */
export function resolveGrantableScopes(requested: readonly string[]): ScopeCheck {
  if (requested.length === 1 && requested[0] === 'all') return { ok: true, scopes: [...PUBLIC_SCOPES] };
  const unknown = requested.filter((scope) => !KNOWN.has(scope));
  const gated = requested.filter((scope) => KNOWN.get(scope)?.launch === 'gated');
  if (unknown.length > 0 || gated.length > 0 || requested.length === 0) {
    return { ok: false, unknown, gated };
  }
  return { ok: true, scopes: [...new Set(requested)] };
}
