/**
 * POST /events (Herald extension, scope events:write): a custom event a contact did, such as
 * `trial.started` or `order.paid`. It is stored for automations' `had_event` conditions and
 * goals, starts the `event` automations of that name for the contact (its properties become
 * the run's `trigger.properties`) and resumes the contact's runs waiting for it. 202: runs
 * proceed in the background.
 */
import { KIB } from '../../http/body-limits.ts';
import { defineRoute } from '../../http/route.ts';
import { EVENT_LIMITS } from './contact-events.fns.ts';
import { TrackedEventResponse, TrackEventBody } from './contact-events.schemas.ts';
import { serializeTrackedEvent } from './contact-events.serializer.ts';
import type { ContactEventsService } from './contact-events.service.ts';

export function createContactEventsRoutes(deps: { events: ContactEventsService }) {
  return [
    defineRoute({
      operationId: 'trackEvent',
      method: 'POST',
      path: '/events',
      summary: "Record a contact's custom event",
      description:
        'The contact is named by `email` (normalised as contacts store it) or `contact_id`, exactly one; 404 when the workspace has no such ' +
        'contact (a contact of any status records the event). The event starts the active automations whose trigger is this `event` name ' +
        "(within their re-entry rule) and resumes the contact's runs waiting for it. `properties`: at most " +
        `${EVENT_LIMITS.propertiesBytes / 1024} KB as JSON.`,
      tag: 'Events',
      scope: 'events:write',
      extension: true,
      body: TrackEventBody,
      // The event name and an address, plus properties of 10 KB that JSON-escaping may make up to six times longer.
      bodyLimit: 64 * KIB,
      response: { status: 202, description: 'The recorded event and the automations it reached', schema: TrackedEventResponse },
      errors: ['invalid_request', 'not_found', 'idempotency_conflict'],
      async handle({ caller, body }) {
        const tracked = await deps.events.trackEvent(caller.orgId, body);
        return { status: 202, data: serializeTrackedEvent(tracked.event, tracked) };
      },
    }),
  ];
}
