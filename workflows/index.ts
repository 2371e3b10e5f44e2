export { cleanupIdempotencyRecords } from './maintenance.ts';
export { recheckDomains, verifyDomain } from './domains.ts';
export { webhookEndpointActor } from './webhook-endpoint.ts';
export { cleanupUploads } from './uploads.ts';
export { cleanupInboundRaw } from './inbound.ts';
export { inboundIntakeActor } from './inbound-intake.ts';
export { sendDomainActor } from './send-domain.ts';
export { contactImport } from './contact-imports.ts';
export { broadcastSend } from './broadcasts.ts';
