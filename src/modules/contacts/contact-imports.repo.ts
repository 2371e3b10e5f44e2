import type { EntityManager } from '@mikro-orm/postgresql';
import { executePrepared } from '../../../db/prepared.ts';
import { newId } from '../../../db/ids.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import type { ImportedContact, RowReason } from './contact-import.fns.ts';
import { IMPORT_LIMITS } from './contact-import.fns.ts';
import type { ContactChange } from '../automations/automation-triggers.fns.ts';

/** A skipped row of the report. */
export interface SkippedRow {
  row: number;
  line: number;
  email: string;
  reason: RowReason;
  message: string;
}

/** Where the import stands after a batch: the file offset and line after its last row. */
export interface ImportCheckpoint {
  rowsDone: number;
  byteOffset: number;
  linesDone: number;
}

/** A non-empty cell of the file, or the stored value (empty cells never blank a field). */
const keep = (column: string) => `coalesce(nullif(excluded.${column}, ''), c.${column})`;
/** The stored tags, then the new ones they lack, at most IMPORT_LIMITS.tags. */
const TAGS = `(c.tags || array(select t from unnest(excluded.tags) t where t <> all(c.tags)))[1:${IMPORT_LIMITS.tags}]`;
const CUSTOM = `c.custom_fields || excluded.custom_fields`;
/** A status only moves away from active. */
const STATUS = `case when c.status = 'active' and excluded.status <> 'active' then excluded.status else c.status end`;
const MERGED = {
  first_name: keep('first_name'),
  last_name: keep('last_name'),
  company: keep('company'),
  tags: TAGS,
  custom_fields: CUSTOM,
  status: STATUS,
};

/** What a batch changed that automations' triggers follow. */
export interface ImportBatchChanges {
  /** Contacts created or written (tags before: none for a created one). */
  contacts: ContactChange[];
  /** Contacts that joined the import's static segment (not members before). */
  joinedSegment: string[];
}

/**
 * One batch of an import, in the caller's transaction: upserts the contacts by (workspace,
 * email) with the merge rule of `mergeImported` (one statement; a contact the row would not
 * change is not written and counts as unchanged), records the skipped rows, and moves the
 * import's counters and checkpoint forward, so a batch and its checkpoint commit together.
 * Returns the contacts created or written (with their tags before and after) and those that
 * joined the segment, for the triggers the caller fires in the same transaction.
 */
export async function writeImportBatch(
  em: EntityManager,
  target: { orgId: string; importId: string; segmentId?: string | null },
  contacts: readonly ImportedContact[],
  skipped: readonly SkippedRow[],
  checkpoint: ImportCheckpoint,
): Promise<ImportBatchChanges> {
  // `prior` reads the tags as the statement's snapshot has them, before the upsert changes them.
  const written = await executePrepared<{ id: string; inserted: boolean; tags_before: string[]; tags_after: string[] }>(em, {
    sql: `with r0 as (
        select * from unnest(:ids::text[], :emails::text[], :firstNames::text[], :lastNames::text[], :companies::text[], :tags::text[], :custom::text[], :statuses::text[])
          as r(id, email, first_name, last_name, company, tags, custom, status)
      ),
      prior as (
        select c.id, c.tags from contacts c where c.org_id = :orgId and c.email = any(:emails::text[])
      ),
      upserted as (
        insert into contacts as c (id, org_id, email, first_name, last_name, company, tags, custom_fields, status, created_at, updated_at)
        select r0.id, :orgId, r0.email, r0.first_name, r0.last_name, r0.company,
               array(select jsonb_array_elements_text(r0.tags::jsonb)), r0.custom::jsonb, coalesce(nullif(r0.status, ''), 'active'), now(), now()
          from r0
        on conflict (org_id, email) do update set
          ${Object.entries(MERGED)
            .map(([column, value]) => `${column} = ${value}`)
            .join(',\n          ')},
          updated_at = now()
        where (${Object.keys(MERGED)
          .map((column) => `c.${column}`)
          .join(', ')}) is distinct from (${Object.values(MERGED).join(', ')})
        returning c.id, (xmax = 0) as inserted, c.tags
      )
      select u.id, u.inserted, case when u.inserted then '{}'::text[] else coalesce(p.tags, '{}'::text[]) end as tags_before, u.tags as tags_after
        from upserted u left join prior p on p.id = u.id`,
    params: {
      orgId: target.orgId,
      ids: contacts.map(() => newId()),
      emails: contacts.map((c) => c.email),
      firstNames: contacts.map((c) => c.firstName),
      lastNames: contacts.map((c) => c.lastName),
      companies: contacts.map((c) => c.company),
      tags: contacts.map((c) => JSON.stringify(c.tags)),
      custom: contacts.map((c) => JSON.stringify(c.customFields)),
      statuses: contacts.map((c) => c.status),
    },
  });
  const created = written.filter((row) => row.inserted).length;
  const updated = written.length - created;
  if (contacts.length > 0) {
    // The contact's timeline shows the imports that named it, with what each did.
    await executePrepared(em, {
      sql: `insert into contact_import_members (contact_id, import_id, org_id, outcome, created_at)
            select c.id, :importId::text, :orgId::text,
                   case when c.id = any(:createdIds::text[]) then 'created' when c.id = any(:updatedIds::text[]) then 'updated' else 'unchanged' end,
                   now()
              from contacts c where c.org_id = :orgId::text and c.email = any(:emails::text[])
            on conflict (contact_id, import_id) do nothing`,
      params: {
        importId: target.importId,
        orgId: target.orgId,
        createdIds: written.filter((row) => row.inserted).map((row) => row.id),
        updatedIds: written.filter((row) => !row.inserted).map((row) => row.id),
        emails: contacts.map((c) => c.email),
      },
    });
  }
  let joinedSegment: string[] = [];
  if (target.segmentId && contacts.length > 0) {
    // Every contact of the batch (new, updated or unchanged) joins the segment, while it is still a static segment of the workspace.
    const rows = await executePrepared<{ ids: string[] }>(em, {
      sql: `with joined as (
              insert into segment_members (segment_id, contact_id, org_id, created_at)
              select :segmentId::text, c.id, :orgId::text, now() from contacts c
               where c.org_id = :orgId::text and c.email = any(:emails::text[])
                 and exists (select 1 from segments s where s.id = :segmentId::text and s.org_id = :orgId::text and s.type = 'static')
              on conflict do nothing returning contact_id
            ),
            touched as (
              update segments set updated_at = now() where id = :segmentId::text and org_id = :orgId::text and exists (select 1 from joined) returning 1
            )
            select array(select contact_id from joined) as ids`,
      params: { segmentId: target.segmentId, orgId: target.orgId, emails: contacts.map((c) => c.email) },
    });
    joinedSegment = rows[0]?.ids ?? [];
  }
  if (skipped.length > 0) {
    await executePrepared(em, {
      sql: `insert into contact_import_errors (import_id, row, org_id, line, email, reason, message)
            select :importId, r.row::int, :orgId, r.line::int, r.email, r.reason, r.message
              from unnest(:rows::text[], :lines::text[], :emails::text[], :reasons::text[], :messages::text[]) as r(row, line, email, reason, message)
            on conflict do nothing`,
      params: {
        importId: target.importId,
        orgId: target.orgId,
        rows: skipped.map((s) => String(s.row)),
        lines: skipped.map((s) => String(s.line)),
        emails: skipped.map((s) => s.email),
        reasons: skipped.map((s) => s.reason),
        messages: skipped.map((s) => s.message.slice(0, 500)),
      },
    });
  }
  await executePrepared(em, {
    sql: `update contact_imports set rows_done = :rowsDone::int, byte_offset = :byteOffset::bigint, lines_done = :linesDone::int,
                 created = created + :created::int, updated = updated + :updated::int,
                 unchanged = unchanged + :unchanged::int, skipped = skipped + :skipped::int,
                 added_to_segment = added_to_segment + :added::int, updated_at = now()
           where id = :importId and org_id = :orgId`,
    params: {
      importId: target.importId,
      orgId: target.orgId,
      rowsDone: checkpoint.rowsDone,
      byteOffset: checkpoint.byteOffset,
      linesDone: checkpoint.linesDone,
      created,
      updated,
      unchanged: contacts.length - created - updated,
      skipped: skipped.length,
      added: joinedSegment.length,
    },
  });
  return {
    contacts: written.map((row) => ({ contactId: row.id, created: row.inserted, tagsBefore: row.tags_before, tagsAfter: row.tags_after })),
    joinedSegment,
  };
}

/** Reads a workspace's segment's type and member count, or undefined when it has no such segment. */
export async function findSegmentSize(
  em: EntityManager,
  orgId: string,
  segmentId: string,
): Promise<{ type: string; members: number } | undefined> {
  return workspaceDb(em, orgId)
    .selectFrom('segments as s')
    .select((eb) => [
      's.type',
      eb
        .cast<number>(
          eb
            .selectFrom('segment_members as m')
            .select((sub) => sub.fn.countAll().as('n'))
            .whereRef('m.segment_id', '=', 's.id'),
          'integer',
        )
        .as('members'),
    ])
    .where('s.id', '=', segmentId)
    .executeTakeFirst();
}
