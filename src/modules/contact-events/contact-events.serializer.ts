import type { ContactEvent } from '../../../db/entities/index.ts';

/** An event as POST /events answers it, with the runs it started and the automations it resumed. */
export function serializeTrackedEvent(event: ContactEvent, outcome: { runsStarted: number; automationsResumed: number }) {
  return {
    _id: event.id,
    event: event.name,
    contact_id: event.contactId,
    properties: event.properties,
    runs_started: outcome.runsStarted,
    automations_resumed: outcome.automationsResumed,
    created_at: event.createdAt.toISOString(),
  };
}
