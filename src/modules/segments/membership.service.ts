/**
 * Members of static segments (scope segments:write to change, segments:read to list): contacts
 * are added and removed by id or address, up to MEMBERSHIP_LIMITS.perRequest at a time, each
 * change in one transaction that locks the segment (concurrent changes of one segment queue;
 * the member cap holds); contacts added start the runs of `segment.joined` automations of the
 * segment in that transaction, and the automations are woken after it. Listing works for every
 * segment type: the contacts it holds now.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { AppError } from '../../errors.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';
import { listContactPage, type ContactJsonPage } from '../contacts/contacts.repo.ts';
import { MEMBERSHIP_LIMITS } from './segments.fns.ts';
import { findSegmentRule } from './segments.repo.ts';
import { countMembers, deleteMembers, findContactsByIdOrEmail, insertMembers, lockStaticSegment, touchSegment } from './membership.repo.ts';
import type { MembershipInput } from './segments.schemas.ts';
import { enrolSegmentMembers } from '../automations/automation-triggers.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';

export interface MembershipChange {
  segmentId: string;
  /** Contacts added (add) or removed (remove). */
  changed: number;
  /** Contacts already members (add) or not members (remove). */
  unchanged: number;
  notFound: { contactIds: string[]; emails: string[] };
  contactCount: number;
}

/** The workspace's contacts named by `input`, and the ids and addresses that name none. */
async function resolveContacts(tx: EntityManager, orgId: string, input: MembershipInput) {
  const ids = [...new Set(input.contact_ids.map((id) => id.toLowerCase()))];
  const emails = [...new Set(input.emails.map(normalizeEmail))];
  const rows = await findContactsByIdOrEmail(tx, orgId, ids, emails);
  const foundIds = new Set(rows.map((r) => r.id));
  const foundEmails = new Set(rows.map((r) => r.email));
  return {
    contactIds: [...foundIds],
    notFound: { contactIds: ids.filter((id) => !foundIds.has(id)), emails: emails.filter((e) => !foundEmails.has(e)) },
  };
}

export function createMembershipService({ orm, wakeAutomations }: { orm: MikroORM; wakeAutomations: AutomationWaker }) {
  /** Runs `change` in a transaction holding the static segment's lock, with the request's contacts resolved. */
  function inLockedSegment<T>(
    orgId: string,
    segmentId: string,
    input: MembershipInput,
    change: (tx: EntityManager, id: string, contacts: Awaited<ReturnType<typeof resolveContacts>>) => Promise<T>,
  ): Promise<T> {
    const id = segmentId.toLowerCase();
    return orm.em.fork().transactional(async (tx) => {
      await lockStaticSegment(tx, orgId, id);
      return change(tx, id, await resolveContacts(tx, orgId, input));
    });
  }

  return {
    /** Adds contacts to a static segment; ones already in it are counted as unchanged. 409 SEGMENT_FULL past the cap. */
    async addMembers(orgId: string, segmentId: string, input: MembershipInput): Promise<MembershipChange> {
      const { change, touched } = await inLockedSegment(orgId, segmentId, input, async (tx, id, { contactIds, notFound }) => {
        const added = await insertMembers(tx, orgId, id, contactIds);
        const contactCount = await countMembers(tx, orgId, id);
        if (contactCount > MEMBERSHIP_LIMITS.membersMax) {
          throw new AppError(
            'conflict',
            `Segment ${id} would hold ${contactCount} contacts; a static segment holds at most ${MEMBERSHIP_LIMITS.membersMax}.`,
            {
              reason: 'SEGMENT_FULL',
              limit: MEMBERSHIP_LIMITS.membersMax,
              members: contactCount - added.length,
            },
          );
        }
        if (added.length > 0) await touchSegment(tx, orgId, id);
        return {
          change: { segmentId: id, changed: added.length, unchanged: contactIds.length - added.length, notFound, contactCount },
          touched: await enrolSegmentMembers(tx, orgId, id, added),
        };
      });
      wakeAutomations(touched);
      return change;
    },

    /** Removes contacts from a static segment; contacts that were not members are counted as unchanged. */
    async removeMembers(orgId: string, segmentId: string, input: MembershipInput): Promise<MembershipChange> {
      return inLockedSegment(orgId, segmentId, input, async (tx, id, { contactIds, notFound }) => {
        const removed = await deleteMembers(tx, orgId, id, contactIds);
        if (removed.length > 0) await touchSegment(tx, orgId, id);
        return {
          segmentId: id,
          changed: removed.length,
          unchanged: contactIds.length - removed.length,
          notFound,
          contactCount: await countMembers(tx, orgId, id),
        };
      });
    },

    /** The segment's contacts now, newest first (as GET /contacts lists them); 404 for an unknown segment. */
    async listMembers(
      orgId: string,
      segmentId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
    ): Promise<ContactJsonPage> {
      return listContactPage(orm.em, orgId, page, { segment: await findSegmentRule(orm.em.fork(), orgId, segmentId) });
    },
  };
}

export type MembershipService = ReturnType<typeof createMembershipService>;
