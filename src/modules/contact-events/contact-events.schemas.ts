import * as v from 'valibot';
import { IdSchema, JsonObject, Timestamp } from '../../http/schemas.ts';
import { ContactEmail } from '../contacts/contacts.schemas.ts';
import { EVENT_LIMITS } from './contact-events.fns.ts';

const EventName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'must be 1 to 100 letters, digits, _ . : or -'),
  v.description('The event name automations match on (an `event` trigger, a wait for `event`, `had_event`).'),
);

const Properties = v.pipe(
  JsonObject,
  v.check(
    (properties) => Buffer.byteLength(JSON.stringify(properties)) <= EVENT_LIMITS.propertiesBytes,
    `must be at most ${EVENT_LIMITS.propertiesBytes / 1024} KB as JSON`,
  ),
  v.description(
    `Values the automations it starts read as \`trigger.properties\`; at most ${EVENT_LIMITS.propertiesBytes / 1024} KB as JSON.`,
  ),
);

/** POST /events: a custom event of one contact, named by `email` or `contact_id` (exactly one). */
export const TrackEventBody = v.pipe(
  v.strictObject({
    event: EventName,
    email: v.optional(ContactEmail),
    contact_id: v.optional(IdSchema),
    properties: v.optional(Properties, {}),
  }),
  v.forward(
    v.partialCheck(
      [['email'], ['contact_id']],
      (body) => (body.email === undefined) !== (body.contact_id === undefined),
      'name the contact by exactly one of email and contact_id',
    ),
    ['email'],
  ),
);

export type TrackEventInput = v.InferOutput<typeof TrackEventBody>;

const Count = v.pipe(v.number(), v.integer(), v.minValue(0));

/** The recorded event and what it did to automations (snake_case, as automations are). */
export const TrackedEventResponse = v.object({
  _id: v.string(),
  event: v.string(),
  contact_id: v.string(),
  properties: v.record(v.string(), v.unknown()),
  runs_started: v.pipe(Count, v.description('Runs the event started: one per `event` automation of this name that admitted the contact.')),
  automations_resumed: v.pipe(
    Count,
    v.description('Automations with a run of the contact that was waiting for this event and resumes now.'),
  ),
  created_at: Timestamp,
});
