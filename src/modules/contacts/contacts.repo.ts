import type { EntityManager } from '@mikro-orm/postgresql';
import type { ContactStatus } from '../../../db/entities/index.ts';
import type { KeysetPage, KeysetPosition } from '../../../db/keyset.ts';

/** A contact as the API shows it: what the serializer reads, from an entity or a plain row. */
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

interface ContactRow {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  company: string;
  tags: string[];
  custom_fields: Record<string, unknown>;
  status: ContactStatus;
  created_ms: number;
  updated_ms: number;
}

export interface ContactFilters {
  email?: string | undefined;
  status?: ContactStatus | undefined;
}

// Timestamps as epoch milliseconds (float8 arrives as a number): the connection hands
// timestamptz over as text, and parsing that text cost more than the rest of a row.
const LIST_COLUMNS = `id, email, first_name, last_name, company, tags, custom_fields, status,
  (extract(epoch from created_at) * 1000)::float8 as created_ms, (extract(epoch from updated_at) * 1000)::float8 as updated_ms`;

function toView(row: ContactRow): ContactView {
  return {
    id: row.id,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    company: row.company,
    tags: row.tags,
    customFields: row.custom_fields,
    status: row.status,
    createdAt: new Date(row.created_ms),
    updatedAt: new Date(row.updated_ms),
  };
}

/**
 * One keyset page of a workspace's contacts, newest first on (created_at, id), as plain rows:
 * the list is the API's busiest read, and hydrating 51 entities into the identity map cost
 * more than the query (bench/results/2026-11-24-profile-api-read-api.txt). The workspace
 * condition is the first of the statement; `(org_id, created_at, id)` is the index it reads.
 */
export async function listContactPage(
  em: EntityManager,
  orgId: string,
  page: { limit: number; after?: KeysetPosition | undefined },
  filters: ContactFilters,
): Promise<KeysetPage<ContactView>> {
  const conditions = ['org_id = ?'];
  const params: unknown[] = [orgId];
  if (filters.email !== undefined) {
    conditions.push('email = ?');
    params.push(filters.email);
  }
  if (filters.status !== undefined) {
    conditions.push('status = ?');
    params.push(filters.status);
  }
  if (page.after) {
    conditions.push('(created_at, id) < (?::timestamptz, ?)');
    params.push(page.after.sortValue.toISOString(), page.after.id);
  }
  params.push(page.limit + 1);
  const rows = await em.execute<ContactRow[]>(
    `select ${LIST_COLUMNS} from contacts where ${conditions.join(' and ')} order by created_at desc, id desc limit ?`,
    params,
  );
  return { items: rows.slice(0, page.limit).map(toView), hasMore: rows.length > page.limit };
}
