import type { SignalDefinition } from '@temporalio/workflow';

/**
 * How the rest of Herald finds and wakes a queue actor, written once in the actor's workflow file
 * (send-domain.ts, webhook-endpoint.ts, inbound-intake.ts) and used by src/temporal/actor-wake.ts
 * at every call site: the workflow's type, its HeraldKind, its stable business id, its workspace
 * (HeraldOrgId) and the signal that says "there may be due rows". Plain values: no workflow
 * context is needed to read them.
 */
export interface ActorContract<Input> {
  /** The workflow function's name, which is its type in Temporal. */
  workflowType: string;
  /** HeraldKind, and the first part of its ids. */
  kind: string;
  /** Its business id; `installation` is TEMPORAL_TASK_QUEUE_PREFIX (for an actor that serves every workspace). */
  workflowId(input: Input, installation: string): string;
  /** HeraldOrgId: its workspace, or PLATFORM_ORG_ID for one that serves every workspace. */
  orgIdOf(input: Input): string;
  /** Sets the actor's "woken" flag; many before its next drain are one. */
  wake: SignalDefinition;
}

/** Workflows that serve every workspace are filed under this HeraldOrgId. */
export const PLATFORM_ORG_ID = 'platform';
