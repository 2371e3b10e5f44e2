import type { ApiKeyMode } from '../../../db/entities/index.ts';

export interface RateLimitProfile {
  requests_per_minute: number;
  burst: number;
  source: 'key' | 'workspace' | 'default';
}

/** Who is calling: resolved once per request by the authenticate middleware. */
export interface KeyContext {
  orgId: string;
  orgSlug: string | null;
  orgName: string | null;
  actorUserId: string;
  keyId: string | null;
  keyMode: ApiKeyMode;
  /** An API key, or a person signed in to the dashboard (src/modules/dashboard/). */
  authMethod: 'api_key' | 'dashboard';
  scopes: string[];
  rateLimit: RateLimitProfile;
}
