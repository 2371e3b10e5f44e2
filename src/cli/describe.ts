import type { ApiKey, Automation, Domain, Organization, SenderIdentity, TemplateShare } from '../../db/entities/index.ts';
import { serializeApiKey } from '../modules/auth/api-keys.serializer.ts';
import type { DomainCheckOutcome } from '../modules/domains/domain-verification.service.ts';
import type { CreditTotals } from '../modules/orgs/credits.repo.ts';

/** The operator's views of Herald's rows (`herald admin … --json`): snake_case, ids and workspace shown. */

export function describeOrg({ org, credits }: { org: Organization; credits: CreditTotals }) {
  return {
    id: org.id,
    name: org.name,
    slug: org.slug,
    credits: credits.balance,
    overage_used: credits.overageUsed,
    overage: org.overageEnabled,
    rate_limit_per_minute: org.rateLimitPerMinute,
    burst: org.rateLimitBurst,
    postal_address: org.postalAddress ?? null,
    created_at: org.createdAt.toISOString(),
  };
}

/** Operator view of a key (herald admin): the API's view with its workspace and rate limits. */
export function describeApiKey(key: ApiKey) {
  const { _id, ...shown } = serializeApiKey(key);
  return { id: _id, org_id: key.orgId, ...shown, rate_limit_per_minute: key.rateLimitPerMinute, burst: key.rateLimitBurst };
}

export function describeDomain(domain: Domain) {
  return {
    id: domain.id,
    org_id: domain.orgId,
    domain: domain.domain,
    status: domain.status,
    verified: domain.status === 'verified',
    is_default: domain.isDefault,
    source: domain.source,
    dkim_selector: domain.dkimSelector,
    daily_cap: domain.dailyCap,
    reputation_state: domain.reputationState,
    created_at: domain.createdAt.toISOString(),
  };
}

export function describeSender(sender: SenderIdentity) {
  return {
    id: sender.id,
    org_id: sender.orgId,
    domain_id: sender.domainId,
    email: sender.email,
    name: sender.name,
    is_default: sender.isDefault,
    created_at: sender.createdAt.toISOString(),
  };
}

export function describeAutomation(automation: Automation) {
  return {
    id: automation.id,
    org_id: automation.orgId,
    name: automation.name,
    status: automation.status,
    trigger_type: automation.triggerType,
    version: automation.version,
    /** The published definition new runs start on; null until one is published. */
    definition_id: automation.definitionId ?? null,
    created_at: automation.createdAt.toISOString(),
  };
}

/** The operator's view of a check (admin --json). */
export function describeDomainCheck(outcome: DomainCheckOutcome) {
  return {
    id: outcome.domainId,
    org_id: outcome.orgId,
    domain: outcome.domain,
    status: outcome.status,
    previous_status: outcome.previousStatus,
    verified: outcome.status === 'verified',
    checked_at: outcome.checkedAt,
    records: outcome.records,
  };
}

export function describeShare(share: TemplateShare) {
  return {
    id: share.id,
    template_id: share.templateId,
    org_id: share.orgId,
    hidden: share.hiddenAt != null,
    created_at: share.createdAt.toISOString(),
  };
}
