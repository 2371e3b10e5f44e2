import { Migration } from '@mikro-orm/migrations';

/**
 * A stored member count per segment (issue 34: the segments list at a million contacts).
 * - `member_count` of a static segment is exact: statement-level triggers on segment_members
 *   add and subtract the rows each statement inserted or deleted, in that statement's
 *   transaction, whichever code wrote them (the API's membership changes, imports, automation
 *   steps, a contact's deletion). Segments are updated in id order, so two statements that
 *   touch the same segments queue instead of deadlocking.
 * - A `tag` or `all` segment's `member_count` is its last full count and `counted_at` when it was
 *   taken (null: never counted); the dashboard shows it as an estimate "as of" that time and
 *   refreshes it when it is older than a minute.
 */
export class Migration20261129050000 extends Migration {

  override name = 'Migration20261129050000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "segments" add column "member_count" integer null, add column "counted_at" timestamptz null;`);
    this.addSql(`create or replace function herald_segment_member_count_fn() returns trigger language plpgsql as $$
      declare
        changed record;
      begin
        if TG_OP = 'INSERT' then
          for changed in select segment_id, count(*) as n from herald_inserted_members group by segment_id order by segment_id loop
            update segments set member_count = coalesce(member_count, 0) + changed.n where id = changed.segment_id;
          end loop;
        else
          for changed in select segment_id, count(*) as n from herald_deleted_members group by segment_id order by segment_id loop
            update segments set member_count = coalesce(member_count, 0) - changed.n where id = changed.segment_id;
          end loop;
        end if;
        return null;
      end;
    $$;`);
    this.addSql(`create trigger "segment_members_count_insert" after insert on "segment_members" referencing new table as herald_inserted_members for each statement execute function herald_segment_member_count_fn();`);
    this.addSql(`create trigger "segment_members_count_delete" after delete on "segment_members" referencing old table as herald_deleted_members for each statement execute function herald_segment_member_count_fn();`);
    this.addSql(`update "segments" s set "member_count" = (select count(*) from "segment_members" m where m.segment_id = s.id) where s.type = 'static';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "segment_members_count_insert" on "segment_members";`);
    this.addSql(`drop trigger if exists "segment_members_count_delete" on "segment_members";`);
    this.addSql(`drop function if exists herald_segment_member_count_fn();`);
    this.addSql(`alter table "segments" drop column "member_count", drop column "counted_at";`);
  }

}
