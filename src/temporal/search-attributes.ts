import type { SearchAttributePair, SearchAttributeType } from '@temporalio/common';
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

const CLI_TYPES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** A search attribute type as the `temporal` CLI spells it (`--type Keyword`). */
export function searchAttributeCliType(type: SearchAttributeType): string {
  return CLI_TYPES[type];
}

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and the operator CLI. */
export function searchAttributeCliSpecs(): { name: string; type: string }[] {
  return HERALD_SEARCH_ATTRIBUTES.map((key) => ({ name: key.name, type: searchAttributeCliType(key.type) }));
}
