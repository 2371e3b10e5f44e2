import type { EntityManager } from '@mikro-orm/postgresql';
import type { ContactStatus } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { queryPrepared } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';

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
  /** Contacts carrying this tag (exact, case included): the GIN index on tags. */
  tag?: string | undefined;
  /** A part of the email or name, any case (at least 3 characters for the trigram index to help). */
  search?: string | undefined;
  /** A prefix of the email, the full name ("first last") or the last name, any case: the three *_prefix_index b-trees. */
  prefix?: string | undefined;
  /** Only the members of this segment of the workspace (segments.fns.ts has the rules). */
  segment?: { id: string; type: string; tags: readonly string[] } | undefined;
}

/** `text` lower-cased with LIKE's wildcards and escape character taken literally. */
const likeEscaped = (text: string) => text.toLowerCase().replace(/[\\%_]/g, '\\$&');

/** What the search matches: the expression of the trigram index contacts_search_index, exactly. */
const SEARCH_TEXT = `lower(email || ' ' || first_name || ' ' || last_name)`;

/**
 * The conditions (on `contacts`, joined with `and` after the statement's own `org_id = :org`)
 * and named parameters (`org` included) that select the contacts of `filters` in a workspace.
 */
export function contactConditions(orgId: string, filters: ContactFilters): { conditions: string[]; params: Record<string, unknown> } {
  const conditions: string[] = [];
  if (filters.email !== undefined) conditions.push('email = :email');
  if (filters.status !== undefined) conditions.push('status = :status');
  if (filters.tag !== undefined) conditions.push('tags @> array[:tag]::text[]');
  if (filters.search !== undefined) conditions.push(`${SEARCH_TEXT} like :search`);
  if (filters.prefix !== undefined) {
    conditions.push(`(lower(email) like :prefix or lower(first_name || ' ' || last_name) like :prefix or lower(last_name) like :prefix)`);
  }
  const segment = filters.segment ? segmentCondition(filters.segment) : { sql: null, params: {} };
  if (segment.sql) conditions.push(segment.sql);
  return {
    conditions,
    params: {
      org: orgId,
      ...(filters.email !== undefined ? { email: filters.email } : {}),
      ...(filters.status !== undefined ? { status: filters.status } : {}),
      ...(filters.tag !== undefined ? { tag: filters.tag } : {}),
      ...(filters.search !== undefined ? { search: `%${likeEscaped(filters.search)}%` } : {}),
      ...(filters.prefix !== undefined ? { prefix: `${likeEscaped(filters.prefix)}%` } : {}),
      ...segment.params,
    },
  };
}

/** The condition (on `contacts`) and parameters that select a segment's members. */
function segmentCondition(segment: NonNullable<ContactFilters['segment']>): { sql: string | null; params: Record<string, unknown> } {
  if (segment.type === 'all') return { sql: null, params: {} };
  if (segment.type === 'static') {
    return {
      sql: 'id in (select contact_id from segment_members where segment_id = :segmentId and org_id = :org)',
      params: { segmentId: segment.id },
    };
  }
  return { sql: 'tags && array[:segmentTags]::text[]', params: { segmentTags: [...segment.tags] } };
}

/** Below this many matches a filtered page is read from the matches' ids (see findFewMatches). */
const FEW_MATCHES = 1_000;

/**
 * The ids of the workspace's contacts matching all of `filters` but the exact email when there
 * are fewer than FEW_MATCHES, else null. With filters PostgreSQL tends to walk (org_id,
 * created_at, id) hoping to meet a page of matches soon: right when the matches are common, a
 * walk of the whole workspace when they are rare or absent (1.1–1.2 s at a million contacts),
 * since the statistics do not know the workspace, nor that two filters common alone (a name
 * and a tag or a status) may share no contact. This probe, without an order, reads the
 * filters' own indexes together (a BitmapAnd of the GIN indexes on tags and on the search
 * text, the prefix b-trees, the partial status index) and stops at FEW_MATCHES; a rare
 * intersection's page is then read by primary key and sorted, a common one's by the walk,
 * which meets matches soon. Probing one filter at a time missed the intersections
 * (BENCHMARKS.md, 2026-11-28). It runs only when pageInWindow finds no page near the start.
 */
async function findFewMatches(em: EntityManager, orgId: string, filters: ContactFilters): Promise<string[] | null> {
  const { conditions, params } = contactConditions(orgId, { ...filters, email: undefined });
  const rows = await em.execute<{ id: string }[]>(
    `select id from contacts where ${['org_id = :org', ...conditions].join(' and ')} limit :probe`,
    { ...params, probe: FEW_MATCHES },
  );
  return rows.length < FEW_MATCHES ? rows.map((row) => row.id) : null;
}

/** A keyset page request: its size and the position it follows (none for the first page). */
type PageRequest = { limit: number; after?: KeysetPosition | undefined };

/** The condition (on `contacts`) and parameters of the rows after the page's position, newest first. */
function afterPosition(page: PageRequest): { conditions: string[]; params: Record<string, unknown> } {
  if (!page.after) return { conditions: [], params: {} };
  return {
    conditions: ['(created_at, id) < (:afterAt::timestamptz, :afterId)'],
    params: { afterAt: page.after.sortValue.toISOString(), afterId: page.after.id },
  };
}

/** How many of the newest contacts (from the page's position) pageInWindow looks through. */
const WINDOW = 2_000;

/**
 * Whether the page's walk of (org_id, created_at, id) is short: the WINDOW contacts from its
 * position hold a full page of matches (and one more), or are all there is. Reading them costs
 * a few ms; the probe, when the filters are common, builds their whole bitmaps first (20–110
 * ms at a million contacts), so a common intersection skips it (BENCHMARKS.md, 2026-11-28).
 */
async function pageInWindow(em: EntityManager, orgId: string, page: PageRequest, filters: ContactFilters): Promise<boolean> {
  const { conditions, params } = contactConditions(orgId, filters);
  const after = afterPosition(page);
  const [row] = await em.execute<{ seen: number; matched: number }[]>(
    `with w as materialized (
       select * from contacts where ${['org_id = :org', ...after.conditions].join(' and ')}
        order by created_at desc, id desc limit :window
     )
     select (select count(*) from w)::int as seen,
            (select count(*) from (select 1 from w where ${['true', ...conditions].join(' and ')} limit :limit + 1) m)::int as matched`,
    { ...params, ...after.params, window: WINDOW, limit: page.limit },
  );
  return (row?.matched ?? 0) > page.limit || (row?.seen ?? 0) < WINDOW;
}

/** Whether a page is worth a findFewMatches probe: a filter that may be rare with an index of its own, and no page in the window. */
async function worthProbing(em: EntityManager, orgId: string, page: PageRequest, filters: ContactFilters): Promise<boolean> {
  if (filters.tag === undefined && filters.prefix === undefined && filters.search === undefined) return false;
  return !(await pageInWindow(em, orgId, page, filters));
}

/** A page of contacts as the API's JSON array (built by PostgreSQL), with what its cursor needs. */
export interface ContactJsonPage {
  /** The items, a JSON array of the spec's Contact objects (the shape serializeContact gives). */
  json: string;
  hasMore: boolean;
  /** The keyset position of the last item; null for an empty page. */
  last: KeysetPosition | null;
}

/** An instant as serializeContact writes it (`Date#toISOString`: UTC, milliseconds, `Z`). */
export const isoMs = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * One keyset page of a workspace's contacts, newest first on (created_at, id), with the items
 * built as the API's JSON by PostgreSQL (as PostgREST does; a row per item from a sorted
 * subselect, cheaper than an object built key by key): the list is the API's busiest read,
 * and parsing 50 rows into objects and serializing them again cost the api more than
 * PostgreSQL spends building the text. The object keys and formats are serializeContact's
 * (a test holds the two to the same output). It runs as a prepared statement of the pool
 * (queryPrepared: parsed once per connection, values bound, not inlined). The workspace condition comes first;
 * `(org_id, created_at, id)` is the index it reads. SQL text that names org_id itself, not a
 * workspaceDb query: built through Kysely (with its plugin) the statement cost the api 0.2 ms
 * more CPU per request, 21 % fewer list requests a second (BENCHMARKS.md, decisions.md).
 */
export async function listContactPage(
  em: EntityManager,
  orgId: string,
  page: PageRequest,
  filters: ContactFilters,
): Promise<ContactJsonPage> {
  const few = (await worthProbing(em, orgId, page, filters)) ? await findFewMatches(em, orgId, filters) : null;
  const [row] = await queryPrepared<{ items: string; count: number; last_id: string | null; last_ms: number | null }>(
    em,
    contactPageStatement(orgId, page, filters, few),
  );
  return {
    json: row?.items ?? '[]',
    hasMore: (row?.count ?? 0) > page.limit,
    last: row?.last_id && row.last_ms !== null ? { id: row.last_id, sortValue: new Date(row.last_ms) } : null,
  };
}

/** The statement of listContactPage (`few`: the ids findFewMatches found, or null). */
export function contactPageStatement(orgId: string, page: PageRequest, filters: ContactFilters, few: string[] | null = null): SqlFragment {
  const { conditions, params } = contactConditions(orgId, filters);
  if (few) {
    conditions.push(few.length === 0 ? 'false' : 'id in (:fewIds)');
    if (few.length > 0) params.fewIds = few;
  }
  const after = afterPosition(page);
  conditions.push(...after.conditions);
  return {
    sql: `with page as (
       select * from contacts where ${['org_id = :org', ...conditions].join(' and ')} order by created_at desc, id desc limit :limit + 1
     ), items as (
       select * from page order by created_at desc, id desc limit :limit
     )
     select coalesce((select json_agg(j) from (
              select id as _id, email, first_name as "firstName", last_name as "lastName", company, tags,
                     custom_fields as "customFields", status, ${isoMs('created_at')} as "createdAt", ${isoMs('updated_at')} as "updatedAt"
                from items order by created_at desc, id desc) j), '[]')::text as items,
            (select count(*) from page)::int as count,
            last.id as last_id, (extract(epoch from last.created_at) * 1000)::float8 as last_ms
       from (select 1) one
       left join (select id, created_at from items order by created_at, id limit 1) last on true`,
    params: { ...params, ...after.params, limit: page.limit },
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
  const { conditions, params } = contactConditions(orgId, filter);
  if (after) conditions.push('(created_at, id) > (:afterAt::timestamptz, :afterId)');
  return em.execute<ExportRow[]>(
    `select id, email, first_name, last_name, company, tags, status, custom_fields,
            ${isoMs('created_at')} as created_at, ${isoMs('updated_at')} as updated_at, created_at::text as position
       from contacts
      where ${['org_id = :org', ...conditions].join(' and ')}
      -- Qualified: a bare created_at here would name the output column (the millisecond text), not the table's.
      order by contacts.created_at, contacts.id
      limit :limit`,
    { ...params, limit, ...(after ? { afterAt: after.at, afterId: after.id } : {}) },
  );
}
