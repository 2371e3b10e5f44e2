import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';

/** The contract of a broadcast's send workflow, written once: src/ imports these. */
export const BROADCAST_SEND_WORKFLOW = 'broadcastSend';
export const BROADCAST_SEND_KIND = 'broadcast';

export interface BroadcastSendInput {
  orgId: string;
  broadcastId: string;
}

export function broadcastSendWorkflowId(broadcastId: string): string {
  return `broadcast:${broadcastId}`;
}

/** "The broadcast's status changed" (cancelled): the workflow stops waiting and looks. */
export const broadcastChangedSignal = defineSignal('changed');

/** What a broadcast's steps report (src/modules/broadcasts/broadcast-sender.ts). */
export interface BroadcastState {
  status: string;
  /** Epoch ms of `scheduled_at` for a scheduled broadcast. */
  scheduledAtMs: number | null;
  audienceWritten: boolean;
}

/** The activities a broadcast's send runs (activities/broadcasts.ts implements them); each idempotent. */
export interface BroadcastActivities {
  broadcastState(input: BroadcastSendInput): Promise<BroadcastState>;
  beginBroadcast(input: BroadcastSendInput): Promise<BroadcastState>;
  /** `resumeAtMs`: the stream's daily budget is spent; write on from the checkpoint at that time. */
  writeBroadcastAudience(input: BroadcastSendInput): Promise<{ status: string; written: number; resumeAtMs?: number }>;
  refreshBroadcast(input: BroadcastSendInput): Promise<BroadcastState>;
  failBroadcast(input: BroadcastSendInput & { reason: string }): Promise<void>;
}

/** Writing the audience heartbeats after every page; a lost worker's pass resumes from the checkpoint. */
const audience = proxyActivities<BroadcastActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

const steps = proxyActivities<BroadcastActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
});

/** How often a sending broadcast looks whether all its messages have left the queue. */
const PROGRESS_EVERY_MS = 5_000;
/** Progress looks per run before continuing as new. */
const LOOKS_PER_RUN = 1_000;

/** How long a run started by a launch that never committed waits for the row before it ends. */
const DRAFT_WAITS = 30;
const DRAFT_WAIT_MS = 2_000;

const FINAL = new Set(['sent', 'cancelled', 'failed', 'deleted', 'draft']);

/**
 * broadcastSend — id `broadcast:<broadcastId>`, HeraldOrgId = its workspace, HeraldKind =
 * broadcast. Started by the launch (POST /outbox/broadcasts/{id}/send). The broadcast's state is
 * its row; this workflow only moves it: waits for `scheduled_at` (a durable timer; a cancel
 * signal ends the wait), starts sending, writes the audience to the sending domain's queue
 * (whose actor delivers it, transactional mail first), then looks every few seconds until every
 * message has left the queue (sent) or, once cancelled, cancels what is still queued. Every step
 * reads the row, so a run continued as new, retried or replayed resumes where the row says.
 */
export async function broadcastSend(input: BroadcastSendInput): Promise<string> {
  let changed = false;
  setHandler(broadcastChangedSignal, () => {
    changed = true;
  });
  try {
    let state = await steps.broadcastState(input);
    // The launch starts this workflow inside its transaction: until the commit, the row is a draft.
    for (let waits = 0; state.status === 'draft' && waits < DRAFT_WAITS; waits += 1) {
      await sleep(DRAFT_WAIT_MS);
      state = await steps.broadcastState(input);
    }
    // `changed` is reset before each read of the row, never after: a signal that arrives while
    // an activity reads the row makes the next wait return at once and read again.
    while (state.status === 'scheduled') {
      const at = state.scheduledAtMs ?? Date.now();
      setCurrentDetails(`scheduled for ${new Date(at).toISOString()}`);
      const woken = await condition(() => changed, Math.max(1, at - Date.now()));
      changed = false;
      state = woken ? await steps.broadcastState(input) : await steps.beginBroadcast(input);
    }
    while (state.status === 'sending' && !state.audienceWritten) {
      setCurrentDetails('writing the audience to the queue');
      changed = false;
      const pass = await audience.writeBroadcastAudience(input);
      if (pass.resumeAtMs === undefined) {
        state = { ...state, status: pass.status };
        break;
      }
      setCurrentDetails(`waiting for the stream's budget until ${new Date(pass.resumeAtMs).toISOString()}`);
      await condition(() => changed, Math.max(1, pass.resumeAtMs - Date.now()));
      state = await steps.broadcastState(input);
    }
    for (let looks = 0; !FINAL.has(state.status) || state.status === 'cancelled'; looks += 1) {
      changed = false;
      state = await steps.refreshBroadcast(input);
      if (FINAL.has(state.status)) break;
      if (looks >= LOOKS_PER_RUN || workflowInfo().continueAsNewSuggested) return await continueAsNew<typeof broadcastSend>(input);
      setCurrentDetails('sending: waiting for the queue to drain');
      await condition(() => changed, PROGRESS_EVERY_MS);
    }
    setCurrentDetails(state.status);
    return state.status;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    await steps.failBroadcast({ ...input, reason: error.cause?.message ?? error.message });
    return 'failed';
  }
}
