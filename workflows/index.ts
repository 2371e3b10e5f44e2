export { cleanupIdempotencyRecords } from './maintenance.ts';
export { recheckDomains, verifyDomain } from './domains.ts';
export { deliverWebhook } from './webhooks.ts';
export { webhookEndpointActor } from './webhook-endpoint.ts';
export { cleanupUploads } from './uploads.ts';
export { cleanupInboundRaw, ingestInbound } from './inbound.ts';
export { inboundIntakeActor } from './inbound-intake.ts';
export { sendEmail } from './sends.ts';
export { sendDomainActor } from './send-domain.ts';
