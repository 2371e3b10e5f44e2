import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Herald's custom search attributes, typed once for workflows and src/ alike
 * (src/temporal/search-attributes.ts builds on them). Every workflow carries HeraldOrgId so an
 * operator can filter a workspace's work in the Temporal UI (`HeraldOrgId = "<org id>"`).
 */
export const HeraldOrgId = defineSearchAttributeKey('HeraldOrgId', SearchAttributeType.KEYWORD);
export const HeraldKind = defineSearchAttributeKey('HeraldKind', SearchAttributeType.KEYWORD);
export const HeraldRecipientDomain = defineSearchAttributeKey('HeraldRecipientDomain', SearchAttributeType.KEYWORD);
export const HeraldDeliveryStatus = defineSearchAttributeKey('HeraldDeliveryStatus', SearchAttributeType.KEYWORD);
