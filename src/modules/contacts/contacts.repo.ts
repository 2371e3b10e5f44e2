import type { EntityManager } from '@mikro-orm/postgresql';
import { type SelectQueryBuilder, sql } from 'kysely';
import type { ContactStatus } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import type { HeraldDb } from '../../../db/orm.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';

/** A contact as the API shows it: what the serializer reads. */
export interface ContactView {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  company: string;
  tags: string[];
  customFields: Record<string, unknown>;
  status: ContactStatus;
  createdAt: Date;
  updatedAt: Date;
}

export interface ContactFilters {
  email?: string | undefined;
  status?: ContactStatus | undefined;
  /** Only the members of this segment of the workspace (segments.fns.ts has the rules). */
  segment?: { id: string; type: string; tags: readonly string[] } | undefined;
}

/** A statement over the workspace's contacts (the `contacts` table, unaliased), as the filters narrow it. */
type ContactsQuery<O> = SelectQueryBuilder<HeraldDb, 'contacts', O>;

/**
 * `query` narrowed to the contacts of `filters` (the statement's `workspaceDb` adds the
 * workspace to `contacts` and to the segment_members of a static segment).
 */
export function whereContacts<O>(query: ContactsQuery<O>, filters: ContactFilters): ContactsQuery<O> {
  let narrowed = query;
  if (filters.email !== undefined) narrowed = narrowed.where('email', '=', filters.email);
  if (filters.status !== undefined) narrowed = narrowed.where('status', '=', filters.status);
  const segment = filters.segment;
  if (segment?.type === 'static') {
    narrowed = narrowed.where('id', 'in', (eb) => eb.selectFrom('segment_members').select('contact_id').where('segment_id', '=', segment.id));
  } else if (segment && segment.type !== 'all') {
    // A tag segment: its members carry one of its tags (the GIN index on contacts.tags).
    narrowed = narrowed.where('tags', '&&', sql<string[]>`${[...segment.tags]}::text[]`);
  }
  return narrowed;
}

/** A page of contacts as the API's JSON array (built by PostgreSQL), with what its cursor needs. */
export interface ContactJsonPage {
  /** The items, a JSON array of the spec's Contact objects (the shape serializeContact gives). */
  json: string;
  hasMore: boolean;
  /** The keyset position of the last item; null for an empty page. */
  last: KeysetPosition | null;
}

/** A timestamptz column of the statement as serializeContact writes an instant (`Date#toISOString`: UTC, milliseconds, `Z`). */
export const isoMs = (column: string) => sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * One keyset page of a workspace's contacts, newest first on (created_at, id), with the items
 * built as the API's JSON by PostgreSQL (as PostgREST does; a row per item from a sorted
 * subselect, cheaper than an object built key by key): the list is the API's busiest read,
 * and parsing 50 rows into objects and serializing them again cost the api more than
 * PostgreSQL spends building the text. The object keys and formats are serializeContact's
 * (a test holds the two to the same output). `workspaceDb` adds the workspace condition
 * (`contacts.org_id`); `(org_id, created_at, id)` is the index it reads, the cursor's
 * `(created_at, id) < (…)` part of the index condition.
 */
export async function listContactPage(
  em: EntityManager,
  orgId: string,
  page: { limit: number; after?: KeysetPosition | undefined },
  filters: ContactFilters,
): Promise<ContactJsonPage> {
  const db = workspaceDb(em, orgId);
  const { after } = page;
  const row = await db
    .with('page', (qc) => {
      const matching = whereContacts(qc.selectFrom('contacts').selectAll(), filters);
      const rest = after ? matching.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(sql<string>`${after.sortValue.toISOString()}::timestamptz`, after.id))) : matching;
      return rest.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit + 1);
    })
    .with('items', (qc) => qc.selectFrom('page').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit))
    .selectFrom(db.selectNoFrom(sql<number>`1`.as('one')).as('one'))
    .leftJoin(
      (eb) => eb.selectFrom('items').select(['id', 'created_at']).orderBy('created_at').orderBy('id').limit(1).as('last'),
      (join) => join.onTrue(),
    )
    .select((eb) => [
      eb
        .cast<string>(
          eb.fn.coalesce(
            eb
              .selectFrom(
                eb
                  .selectFrom('items')
                  .select([
                    'id as _id',
                    'email',
                    'first_name as firstName',
                    'last_name as lastName',
                    'company',
                    'tags',
                    'custom_fields as customFields',
                    'status',
                    isoMs('created_at').as('createdAt'),
                    isoMs('updated_at').as('updatedAt'),
                  ])
                  .orderBy('created_at', 'desc')
                  .orderBy('id', 'desc')
                  .as('j'),
              )
              .select((sub) => sub.fn.jsonAgg('j').as('items')),
            sql<unknown>`'[]'`,
          ),
          'text',
        )
        .as('items'),
      eb.cast<number>(eb.selectFrom('page').select((sub) => sub.fn.countAll().as('n')), 'integer').as('count'),
      'last.id as last_id',
      sql<number | null>`(extract(epoch from ${eb.ref('last.created_at')}) * 1000)::float8`.as('last_ms'),
    ])
    .executeTakeFirst();
  return {
    json: row?.items ?? '[]',
    hasMore: (row?.count ?? 0) > page.limit,
    last: row?.last_id && row.last_ms !== null ? { id: row.last_id, sortValue: new Date(row.last_ms) } : null,
  };
}

export interface ExportRow {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  company: string;
  tags: string[];
  status: ContactStatus;
  custom_fields: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /** created_at as PostgreSQL prints it (microseconds): the keyset position. */
  position: string;
}

/**
 * A keyset page of the workspace's contacts matching `filter`, oldest first, after `after` (the
 * export's read): `(org_id, created_at, id)` is the index it reads, in order.
 */
export async function findExportPage(
  em: EntityManager,
  orgId: string,
  filter: Pick<ContactFilters, 'status' | 'segment'>,
  after: { at: string; id: string } | null,
  limit: number,
): Promise<ExportRow[]> {
  const matching = whereContacts(
    workspaceDb(em, orgId)
      .selectFrom('contacts')
      .select(['id', 'email', 'first_name', 'last_name', 'company', 'tags', 'status', 'custom_fields', isoMs('created_at').as('created_at'), isoMs('updated_at').as('updated_at'), sql<string>`created_at::text`.as('position')]),
    filter,
  );
  const rest = after ? matching.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(sql<string>`${after.at}::timestamptz`, after.id))) : matching;
  // Qualified: a bare `created_at` in ORDER BY would name the output column (the millisecond text), not the table's.
  return rest.orderBy('contacts.created_at').orderBy('contacts.id').limit(limit).execute();
}
