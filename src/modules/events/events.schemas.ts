import * as v from 'valibot';
import { Timestamp } from '../../http/schemas.ts';
import { AutomationRunResponse } from '../automations/automations.schemas.ts';
import { BroadcastResponse } from '../broadcasts/broadcasts.schemas.ts';
import { ContactResponse } from '../contacts/contacts.schemas.ts';
import { DMARC_DISPOSITION_COUNTS } from '../dmarc/dmarc.schemas.ts';
import { DomainOptionResponse } from '../domains/domains.schemas.ts';
import { TrackingDomainResponse } from '../tracking/tracking.schemas.ts';

/**
 * Herald's event catalog: every event type a webhook endpoint can subscribe to, what it means
 * and the shape of its `data`. Events are delivered in the envelope
 * `{id, object: "event", type, created_at, api_version: "1.0.0", data}`. `recordEvent` only
 * accepts these types (checked by tsc), the docs page /docs/events and the OpenAPI `webhooks`
 * section are generated from this list, and webhook registration validates against it.
 */

export const EVENT_TYPES = [
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.unsubscribed',
  'contact.suppressed',
  'contact.bounced',
  'contact.complained',
  'broadcast.created',
  'broadcast.scheduled',
  'broadcast.sending',
  'broadcast.sent',
  'broadcast.cancelled',
  'broadcast.failed',
  'domain.verified',
  'domain.attention',
  'domain.tracking_verified',
  'domain.tracking_attention',
  'domain.dmarc_report_received',
  'email.sent',
  'email.delivered',
  'email.deferred',
  'email.bounced',
  'email.complained',
  'email.failed',
  'email.opened',
  'email.clicked',
  'email.received',
  'automation.run.completed',
  'automation.run.failed',
  'automation.webhook',
  'workspace.reputation_paused',
  'workspace.reputation_resumed',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Subscribing to `*` means every event type, including types added later (an addressed type goes only where it is addressed). */
export const ALL_EVENTS = '*';

export const EVENT_CATEGORIES = ['contact', 'compliance', 'broadcast', 'domain', 'email', 'automation', 'workspace', 'webhook'] as const;
export type EventCategory = (typeof EVENT_CATEGORIES)[number];

export interface EventDefinition {
  type: EventType;
  category: EventCategory;
  /** One line: when it is emitted. */
  description: string;
  /** The shape of the event's `data` (extra fields may be added without a new api_version). */
  data: v.GenericSchema;
}

const ContactData = v.object({ contact: ContactResponse });
const ContactStatusData = v.object({
  contact: ContactResponse,
  previous_status: v.picklist(['active', 'unsubscribed', 'bounced', 'complained', 'suppressed']),
});
const DomainData = v.object({
  domain: DomainOptionResponse,
  previous_status: v.string(),
});

/** A tracking host's verification changed: the host as it is now, and its status before. */
const TrackingHostData = v.object({
  tracking: TrackingDomainResponse,
  previous_status: v.picklist(['none', 'pending', 'verified']),
});

/** A DMARC aggregate report stored for a domain: who reported which period, and its messages summed (see dmarc.serializer.ts). */
const DmarcReportData = v.object({
  domain_id: v.string(),
  domain: v.string(),
  dmarc_report_id: v.string(),
  reporter: v.object({ org_name: v.string(), email: v.string() }),
  report_id: v.string(),
  policy_domain: v.string(),
  date_range: v.object({ begin: Timestamp, end: Timestamp }),
  record_count: v.number(),
  message_count: v.number(),
  ...DMARC_DISPOSITION_COUNTS,
  received_at: Timestamp,
});

/** A reputation pause or resume: what paused (scope), why, and the rates measured over the window. */
const ReputationData = v.object({
  scope: v.picklist(['broadcast', 'all']),
  reason: v.string(),
  bounce_rate: v.number(),
  complaint_rate: v.number(),
  sent: v.number(),
  window_hours: v.number(),
  max_bounce_rate: v.number(),
  max_complaint_rate: v.number(),
  paused_at: Timestamp,
  resumed_at: v.optional(Timestamp),
  resumed_by: v.optional(v.string()),
});

/** What every email.* delivery event carries: which email, which recipient, when. */
const emailData = <T extends v.ObjectEntries>(extra: T) =>
  v.object({
    email_id: v.string(),
    message_id: v.nullable(v.string()),
    broadcast_id: v.nullable(v.string()),
    from: v.string(),
    recipient: v.string(),
    subject: v.string(),
    occurred_at: Timestamp,
    ...extra,
  });

/** A broadcast status change: the broadcast as it is after it. */
const broadcastEvent = (description: string): Omit<EventDefinition, 'type'> => ({
  category: 'broadcast',
  description,
  data: v.object({ broadcast: BroadcastResponse }),
});

const Address = v.object({ email: v.string(), name: v.string() });

/** A run that ended, and its automation. */
const RunData = v.object({ run: AutomationRunResponse, automation: v.object({ _id: v.string(), name: v.string() }) });

const definitions: Record<EventType, Omit<EventDefinition, 'type'>> = {
  'contact.created': {
    category: 'contact',
    description: 'A contact was created (API or import).',
    data: ContactData,
  },
  'contact.updated': {
    category: 'contact',
    description: 'A contact changed; `changed_fields` lists the changed fields as named in `contact`.',
    data: v.object({ contact: ContactResponse, changed_fields: v.array(v.string()) }),
  },
  'contact.deleted': {
    category: 'contact',
    description: 'A contact was deleted; `contact` is its last state.',
    data: ContactData,
  },
  'contact.unsubscribed': {
    category: 'compliance',
    description: 'A contact moved to status unsubscribed.',
    data: ContactStatusData,
  },
  'contact.suppressed': {
    category: 'compliance',
    description: 'A contact moved to status suppressed: Herald will not send to it.',
    data: ContactStatusData,
  },
  'contact.bounced': {
    category: 'compliance',
    description: 'A contact moved to status bounced (a hard bounce, or set over the API).',
    data: ContactStatusData,
  },
  'contact.complained': {
    category: 'compliance',
    description: 'A contact moved to status complained (a spam complaint, or set over the API).',
    data: ContactStatusData,
  },
  'broadcast.created': {
    category: 'broadcast',
    description: 'A broadcast draft was created.',
    data: v.object({ broadcast: BroadcastResponse }),
  },
  'broadcast.scheduled': broadcastEvent('A broadcast was launched for its scheduled_at.'),
  'broadcast.sending': broadcastEvent("A broadcast started sending: its audience (the segments' contacts as of now) is being queued."),
  'broadcast.sent': broadcastEvent('Every message of a broadcast left the queue (delivered, bounced, failed or skipped).'),
  'broadcast.cancelled': broadcastEvent('A broadcast was cancelled; messages not yet handed off are not sent.'),
  'broadcast.failed': {
    category: 'broadcast',
    description: 'Herald stopped a broadcast (`reason` says why); messages already queued still go.',
    data: v.object({ broadcast: BroadcastResponse, reason: v.string() }),
  },
  'domain.verified': {
    category: 'domain',
    description: 'A sending domain passed DNS verification (SPF, DKIM and return path found).',
    data: DomainData,
  },
  'domain.attention': {
    category: 'domain',
    description: 'A verified sending domain lost a required DNS record; sending from it is refused until fixed.',
    data: DomainData,
  },
  'domain.tracking_verified': {
    category: 'domain',
    description:
      "A domain's custom tracking host was found as a CNAME to Herald's host (when set, checked through the API, or at the daily re-check): its open and click links use it from now on.",
    data: TrackingHostData,
  },
  'domain.tracking_attention': {
    category: 'domain',
    description:
      "A verified custom tracking host's CNAME is gone or points elsewhere (found by a check or the daily re-check): the domain's open and click links are on Herald's own host until it is fixed and checked again.",
    data: TrackingHostData,
  },
  'domain.dmarc_report_received': {
    category: 'domain',
    description:
      "A DMARC aggregate report about the domain arrived at its report address and was stored: the reporter, the period, and the report's messages summed (passing DMARC or not, each mechanism aligned, quarantined and rejected). A report sent again emits nothing.",
    data: DmarcReportData,
  },
  'email.sent': {
    category: 'email',
    description: 'The relay accepted the message for one recipient.',
    data: emailData({}),
  },
  'email.delivered': {
    category: 'email',
    description: "The recipient's mail server accepted the message.",
    data: emailData({ smtp_response: v.nullable(v.string()) }),
  },
  'email.deferred': {
    category: 'email',
    description: 'Delivery to one recipient failed temporarily (4xx); Herald retries.',
    data: emailData({ reason: v.string(), next_attempt_at: v.nullable(Timestamp) }),
  },
  'email.bounced': {
    category: 'email',
    description: 'The message bounced for one recipient: hard (5xx or a DSN) or soft (retries ran out).',
    data: emailData({ bounce_type: v.picklist(['hard', 'soft']), diagnostic: v.nullable(v.string()) }),
  },
  'email.complained': {
    category: 'email',
    description: 'The recipient reported the message as spam (feedback loop report).',
    data: emailData({ feedback_type: v.nullable(v.string()) }),
  },
  'email.failed': {
    category: 'email',
    description: 'Herald could not hand the message over for one recipient (e.g. suppressed, rejected before sending).',
    data: emailData({ reason: v.string() }),
  },
  'email.opened': {
    category: 'email',
    description: 'The recipient first opened a message with open tracking (its pixel loaded, or a tracked link was clicked first).',
    data: emailData({}),
  },
  'email.clicked': {
    category: 'email',
    description: 'The recipient first clicked a tracked link of a message with click tracking (scanner bursts are not counted).',
    data: emailData({ url: v.nullable(v.string()) }),
  },
  'email.received': {
    category: 'email',
    description: 'An inbound message arrived in the inbox.',
    data: v.object({
      message: v.object({
        id: v.string(),
        thread_id: v.string(),
        direction: v.literal('inbound'),
        subject: v.string(),
        from: Address,
        to: v.array(Address),
        rfc_message_id: v.nullable(v.string()),
        attachment_count: v.number(),
        created_at: Timestamp,
      }),
    }),
  },
  'automation.run.completed': {
    category: 'automation',
    description:
      'A run completed: it reached a step without `next`, an exit step, or its goal (`exit_reason` says which of the last two); `run` is as GET /automations/{id}/runs answers it.',
    data: RunData,
  },
  'automation.run.failed': {
    category: 'automation',
    description: 'A run stopped on an error; `run.error` says why and `run.step_id` is the step that failed.',
    data: RunData,
  },
  'automation.webhook': {
    category: 'automation',
    description:
      "A run reached a webhook step. Delivered only to the endpoint the step names (`endpoint_id`), whether or not it subscribed to this type; never to other endpoints, `*` included. `contact` is the run's contact (null when it no longer exists); `payload` is the step's own.",
    data: v.object({
      automation_id: v.string(),
      run_id: v.string(),
      step_id: v.string(),
      endpoint_id: v.string(),
      contact: v.nullable(ContactResponse),
      payload: v.record(v.string(), v.unknown()),
    }),
  },
  'workspace.reputation_paused': {
    category: 'workspace',
    description:
      "The workspace's bounce or complaint rate over the reputation policy's window passed its threshold: broadcast sending (or, per the policy, all sending) is paused until an operator resumes it. `reason` says why in words.",
    data: ReputationData,
  },
  'workspace.reputation_resumed': {
    category: 'workspace',
    description: "An operator resumed the workspace's sending after a reputation pause; the policy's window starts again from now.",
    data: ReputationData,
  },
  'webhook.test': {
    category: 'webhook',
    description:
      'A test event someone sent from the dashboard to check an endpoint. Delivered only to the endpoint it names (`endpoint_id`), whether or not it subscribed to this type, signed and retried like any other event; it describes nothing that happened, so acknowledge it and do nothing else.',
    data: v.object({ endpoint_id: v.string(), message: v.string() }),
  },
};

/** Every event type with its category, description and data shape, in catalog order. */
export const EVENT_CATALOG: readonly EventDefinition[] = EVENT_TYPES.map((type) => ({ type, ...definitions[type] }));

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** Whether an endpoint subscribed to `events` receives an event of `type` (for types that are not addressed). */
export function endpointReceives(events: readonly string[], type: string): boolean {
  return events.includes(ALL_EVENTS) || events.includes(type);
}

/**
 * Types addressed to one endpoint, the one their `data.endpoint_id` names (an automation's
 * webhook step, a test event from the dashboard): that endpoint receives them whatever it subscribed to, and no other does.
 */
export const ADDRESSED_EVENT_TYPES: readonly EventType[] = ['automation.webhook', 'webhook.test'];

export function isAddressedType(type: string): boolean {
  return (ADDRESSED_EVENT_TYPES as readonly string[]).includes(type);
}

/**
 * Whether an endpoint gets an event: an addressed event only the endpoint it names
 * (`addressedTo`, its `data.endpoint_id`), any other event the endpoints subscribed to its type.
 */
export function endpointGets(
  endpoint: { id: string; events: readonly string[] },
  event: { type: string; addressedTo: string | null },
): boolean {
  if (isAddressedType(event.type)) return event.addressedTo === endpoint.id;
  return endpointReceives(endpoint.events, event.type);
}

/** The delivered envelope of one event type (for the OpenAPI `webhooks` section). */
export function eventEnvelopeSchema(definition: EventDefinition): v.GenericSchema {
  return v.object({
    id: v.string(),
    object: v.literal('event'),
    type: v.literal(definition.type),
    created_at: Timestamp,
    api_version: v.literal('1.0.0'),
    data: definition.data,
  });
}
