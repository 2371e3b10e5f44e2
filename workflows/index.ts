export { cleanupIdempotencyRecords } from './maintenance.ts';
export { recheckDomains, verifyDomain } from './domains.ts';
export { deliverWebhook } from './webhooks.ts';
