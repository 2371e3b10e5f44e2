import type { SearchAttributePair } from '@temporalio/common';
import { HeraldDeliveryStatus, HeraldKind, HeraldOrgId, HeraldRecipientDomain } from '../../workflows/search-attributes.ts';

/** The keys are defined once in workflows/search-attributes.ts; platform-wide maintenance runs under PLATFORM_ORG_ID. */
export { HeraldDeliveryStatus, HeraldKind, HeraldOrgId, HeraldRecipientDomain };

export const HERALD_SEARCH_ATTRIBUTES = [HeraldOrgId, HeraldKind, HeraldRecipientDomain, HeraldDeliveryStatus] as const;

export { PLATFORM_ORG_ID } from '../../workflows/actor-contract.ts';

/** The search attributes every Herald workflow starts with; `kind` is the KIND its workflow file exports. */
export function workflowSearchAttributes(orgId: string, kind: string): SearchAttributePair[] {
  return [
    { key: HeraldOrgId, value: orgId },
    { key: HeraldKind, value: kind },
  ];
}

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and the operator CLI. */
export function searchAttributeCliSpecs(): { name: string; type: string }[] {
  return HERALD_SEARCH_ATTRIBUTES.map((key) => ({ name: key.name, type: 'Keyword' }));
}
