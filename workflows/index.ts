export { cleanupIdempotencyRecords } from './maintenance.ts';
