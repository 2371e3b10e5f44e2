/**
 * Where the product's changes meet automations' triggers. Each function runs in the caller's
 * transaction (the change and the runs it starts commit together) and returns the automations
 * that got runs or events, for the caller to wake after its commit (automation-wake.ts); a
 * caller without a waker leaves them to the automation reconciler. Work is set-based: one
 * enrolment per trigger key for a whole batch of contacts, and one indexed read of the
 * workspace's active triggers first, so a change no automation listens for costs that read only.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { TriggerType } from './automation-definition.ts';
import { enrolContacts, signalRuns, wakeGoalRuns, type Enrolment, type TouchedAutomation } from './automation-runs.repo.ts';
import { activeTriggerSet, addedTags, engagementKeys, groupByKey, joinsSegment, type ContactChange } from './automation-triggers.fns.ts';
import { findActiveTriggers, findEngagedEmails, findRepliedEmail, findSegmentRules, findWaitingRuns } from './automation-triggers.repo.ts';

export type { ContactChange } from './automation-triggers.fns.ts';

const CONTACT_TRIGGERS: readonly TriggerType[] = ['contact.created', 'tag.added', 'segment.joined'];

async function enrolAll(em: EntityManager, enrolments: readonly Enrolment[]): Promise<TouchedAutomation[]> {
  const touched: TouchedAutomation[] = [];
  for (const enrolment of enrolments) touched.push(...(await enrolContacts(em, enrolment)));
  return touched;
}

/**
 * Contacts created or tagged: `contact.created` for the new ones; `tag.added` once per tag a
 * contact did not carry; `segment.joined` for each `tag` segment a contact matches now and did
 * not before, and each `all` segment for a new contact. Runs of a contact that got a tag, waiting
 * under a goal the tag may meet, are made due now (wakeGoalRuns). Removing tags or changing
 * fields meets no goal (goals are a tag, a segment or an event), so it wakes nothing.
 */
export async function enrolContactChanges(
  em: EntityManager,
  orgId: string,
  changes: readonly ContactChange[],
): Promise<TouchedAutomation[]> {
  const relevant = changes.filter((change) => change.created || addedTags(change).length > 0);
  if (relevant.length === 0) return [];
  const goals = await wakeGoalRuns(
    em,
    orgId,
    relevant
      .filter((change) => !change.created)
      .flatMap((change) => addedTags(change).map((tag) => ({ contactId: change.contactId, kind: 'tag' as const, value: tag }))),
  );
  const active = activeTriggerSet(await findActiveTriggers(em, orgId, CONTACT_TRIGGERS));
  if (active.empty) return goals;
  const enrolments: Enrolment[] = [];
  const created = relevant.filter((change) => change.created).map((change) => change.contactId);
  if (created.length > 0 && active.has('contact.created', null)) {
    enrolments.push({ orgId, type: 'contact.created', key: null, contactIds: created });
  }
  const tagged = groupByKey(relevant.flatMap((change) => addedTags(change).map((tag) => [tag, change.contactId] as const)));
  for (const [tag, contactIds] of tagged) {
    if (active.has('tag.added', tag)) enrolments.push({ orgId, type: 'tag.added', key: tag, contactIds });
  }
  for (const segment of await findSegmentRules(em, orgId, active.keys('segment.joined'))) {
    const joined = relevant.filter((change) => joinsSegment(segment, change)).map((change) => change.contactId);
    if (joined.length > 0) enrolments.push({ orgId, type: 'segment.joined', key: segment.id, contactIds: joined });
  }
  return [...goals, ...(await enrolAll(em, enrolments))];
}

/**
 * Contacts newly added to a static segment (members already in it are not passed): they start
 * `segment.joined` automations of the segment, and their runs waiting under an `in_segment`
 * goal of it are made due now.
 */
export async function enrolSegmentMembers(
  em: EntityManager,
  orgId: string,
  segmentId: string,
  contactIds: readonly string[],
): Promise<TouchedAutomation[]> {
  const goals = await wakeGoalRuns(
    em,
    orgId,
    contactIds.map((contactId) => ({ contactId, kind: 'segment' as const, value: segmentId })),
  );
  return [...goals, ...(await enrolContacts(em, { orgId, type: 'segment.joined', key: segmentId, contactIds }))];
}

/** The first counted open or click of an email. */
export interface EmailEngagement {
  orgId: string;
  emailId: string;
  type: 'opened' | 'clicked';
}

/**
 * First opens and clicks (of any workspaces): runs of the email's contact waiting for
 * `email.<type>:<emailId>` resume, and `email.<type>` automations start for the contact, those
 * keyed by the email's template (`template:<id>`) or broadcast (`broadcast:<id>`) and those
 * without a key (any email). An email whose contact is not known (several recipients, or an
 * address that is no contact) triggers nothing.
 */
export async function fireEmailEngagement(em: EntityManager, engagements: readonly EmailEngagement[]): Promise<TouchedAutomation[]> {
  if (engagements.length === 0) return [];
  const emails = await findEngagedEmails(em, [
    ...new Map(engagements.map((e) => [e.emailId, { org_id: e.orgId, email_id: e.emailId }])).values(),
  ]);
  const byId = new Map(emails.map((email) => [email.email_id, email]));
  const touched: TouchedAutomation[] = [];
  for (const orgId of new Set(engagements.map((e) => e.orgId))) {
    const events = engagements.flatMap((engagement) => {
      const email = byId.get(engagement.emailId);
      return engagement.orgId === orgId && email?.contact_id ? [{ ...engagement, email, contactId: email.contact_id }] : [];
    });
    if (events.length === 0) continue;
    const waiting = await findWaitingRuns(
      em,
      orgId,
      events.map((event) => event.contactId),
      events.map((event) => `email.${event.type}:${event.emailId}`),
    );
    for (const run of waiting) {
      const key = run.waiting_for;
      touched.push(
        ...(await signalRuns(em, { orgId, contactId: run.contact_id, key, detail: { email_id: key.slice(key.indexOf(':') + 1) } })),
      );
    }
    const active = activeTriggerSet(await findActiveTriggers(em, orgId, ['email.opened', 'email.clicked']));
    if (active.empty) continue;
    const triggers = new Map<string, { type: TriggerType; key: string | null }>();
    const pairs = events.flatMap((event) => {
      const type: TriggerType = event.type === 'opened' ? 'email.opened' : 'email.clicked';
      return engagementKeys(event.email).flatMap((key) => {
        if (!active.has(type, key)) return [];
        const id = `${type}\n${key ?? ''}`;
        triggers.set(id, { type, key });
        return [[id, event.contactId] as const];
      });
    });
    const enrolments = [...groupByKey(pairs)].map(([id, contactIds]) => ({ orgId, ...triggers.get(id)!, contactIds }));
    touched.push(...(await enrolAll(em, enrolments)));
  }
  return touched;
}

/**
 * An inbound message of the workspace that answers an email Herald sent (by In-Reply-To, else
 * References, most specific first): runs waiting for `email.replied:<emailId>` of the email's
 * contact resume, and `email.replied` automations start for the contact with the sender's
 * address (else the email's contact).
 */
export async function fireEmailReply(
  em: EntityManager,
  orgId: string,
  reply: { candidates: readonly string[]; sender: string; inboxMessageId: string },
): Promise<TouchedAutomation[]> {
  if (!reply.sender) return [];
  const replied = await findRepliedEmail(em, orgId, reply.candidates, reply.sender);
  if (!replied) return [];
  const touched: TouchedAutomation[] = [];
  const waiting = replied.email_contact_id ?? replied.sender_contact_id;
  if (waiting) {
    touched.push(
      ...(await signalRuns(em, {
        orgId,
        contactId: waiting,
        key: `email.replied:${replied.email_id}`,
        detail: { email_id: replied.email_id, inbox_message_id: reply.inboxMessageId },
      })),
    );
  }
  const replier = replied.sender_contact_id ?? replied.email_contact_id;
  if (replier) touched.push(...(await enrolContacts(em, { orgId, type: 'email.replied', key: null, contactIds: [replier] })));
  return touched;
}

/** What a custom event did: the automations it started a run of, and those whose waiting runs it resumed (the event heard, or a goal it meets). */
export interface ContactEventOutcome {
  started: TouchedAutomation[];
  resumed: TouchedAutomation[];
}

/**
 * A custom event of a contact: `event` automations keyed by its name start (with its properties
 * as the trigger's), the contact's runs waiting for `event:<name>` resume, and its runs waiting
 * under a `had_event` goal of that name are made due now.
 */
export async function fireContactEvent(
  em: EntityManager,
  event: { orgId: string; contactId: string; eventId: string; name: string; properties: Record<string, unknown> },
): Promise<ContactEventOutcome> {
  const started = await enrolContacts(em, {
    orgId: event.orgId,
    type: 'event',
    key: event.name,
    contactIds: [event.contactId],
    properties: event.properties,
  });
  const resumed = await signalRuns(em, {
    orgId: event.orgId,
    contactId: event.contactId,
    key: `event:${event.name}`,
    detail: { event_id: event.eventId, properties: event.properties },
  });
  const goals = await wakeGoalRuns(em, event.orgId, [{ contactId: event.contactId, kind: 'event', value: event.name }]);
  const ids = new Set(resumed.map((touched) => touched.automationId));
  return { started, resumed: [...resumed, ...goals.filter((touched) => !ids.has(touched.automationId))] };
}
