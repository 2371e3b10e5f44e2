import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type SearchAttributePair,
} from '@temporalio/common';

/**
 * Herald's custom search attributes. Every workflow carries HeraldOrgId so an operator can
 * filter a workspace's work in the Temporal UI (`HeraldOrgId = "<org id>"`). Platform-wide
 * maintenance runs under the reserved value PLATFORM_ORG_ID.
 */
export const HeraldOrgId = defineSearchAttributeKey('HeraldOrgId', SearchAttributeType.KEYWORD);
export const HeraldKind = defineSearchAttributeKey('HeraldKind', SearchAttributeType.KEYWORD);
export const HeraldRecipientDomain = defineSearchAttributeKey(
  'HeraldRecipientDomain',
  SearchAttributeType.KEYWORD,
);
export const HeraldDeliveryStatus = defineSearchAttributeKey(
  'HeraldDeliveryStatus',
  SearchAttributeType.KEYWORD,
);

export const HERALD_SEARCH_ATTRIBUTES = [
  HeraldOrgId,
  HeraldKind,
  HeraldRecipientDomain,
  HeraldDeliveryStatus,
] as const;

export const PLATFORM_ORG_ID = 'platform';

export type WorkflowKind = 'maintenance' | 'email' | 'send-domain' | 'webhook-delivery' | 'webhook-endpoint' | 'inbound' | 'inbound-intake' | 'domain-verify' | 'contact-import';

/** The search attributes every Herald workflow starts with. */
export function workflowSearchAttributes(
  orgId: string,
  kind: WorkflowKind,
): SearchAttributePair[] {
  return [
    { key: HeraldOrgId, value: orgId },
    { key: HeraldKind, value: kind },
  ];
}

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and the operator CLI. */
export function searchAttributeCliSpecs(): { name: string; type: string }[] {
  return HERALD_SEARCH_ATTRIBUTES.map((key) => ({ name: key.name, type: 'Keyword' }));
}
