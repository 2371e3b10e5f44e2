import { ActivityFailure, proxyActivities } from '@temporalio/workflow';

/** The contract of the contact import workflow, written once: src/ imports these. */
export const CONTACT_IMPORT_WORKFLOW = 'contactImport';
export const CONTACT_IMPORT_KIND = 'contact-import';

export interface ContactImportInput {
  orgId: string;
  importId: string;
}

export function contactImportWorkflowId(importId: string): string {
  return `contact-import:${importId}`;
}

/** What the import's passes report back (src/modules/contacts/contact-import.runner.ts). */
export interface ContactImportSummary {
  /** The import's status (db/entities/contact-import.ts CONTACT_IMPORT_STATUSES). */
  status: 'awaiting_upload' | 'validating' | 'importing' | 'completed' | 'failed';
  rowsDone: number;
  created: number;
  updated: number;
  unchanged: number;
  skipped: number;
}

/** The passes of a contact import (activities/contact-imports.ts implements them); each idempotent. */
export interface ContactImportActivities {
  validateContactImport(input: ContactImportInput): Promise<ContactImportSummary>;
  runContactImport(input: ContactImportInput): Promise<ContactImportSummary>;
  giveUpContactImport(input: ContactImportInput & { message: string }): Promise<ContactImportSummary>;
}

/**
 * Each pass streams the file and heartbeats as it goes (a batch commits its checkpoint), so a
 * worker lost mid-pass is noticed within the heartbeat timeout and the pass resumes elsewhere
 * from the last commit.
 */
const passes = proxyActivities<ContactImportActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

const { giveUpContactImport } = proxyActivities<ContactImportActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5s', maximumInterval: '1 minute' },
});

/**
 * contactImport — id `contact-import:<importId>`, HeraldOrgId = the import's workspace,
 * HeraldKind = contact-import. Started by the signed PUT of the import's file. Validates the
 * whole file (a refused file ends the import failed, nothing imported), then imports its rows
 * in batches (src/modules/contacts/contact-import.runner.ts). When a pass keeps failing past its
 * retries the import ends failed with what it had done.
 */
export async function contactImport(input: ContactImportInput): Promise<ContactImportSummary> {
  try {
    const validated = await passes.validateContactImport(input);
    if (validated.status !== 'importing') return validated;
    return await passes.runContactImport(input);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return giveUpContactImport({ ...input, message: error.cause?.message ?? error.message });
  }
}
