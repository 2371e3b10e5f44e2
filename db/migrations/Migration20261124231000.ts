import { Migration } from '@mikro-orm/migrations';

export class Migration20261124231000 extends Migration {

  override name = 'Migration20261124231000';

  override up(): void | Promise<void> {
    // The suppression list's audit trail, and `unsubscribe` as a reason (one-click unsubscribes).
    this.addSql(`create table "suppression_changes" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email" varchar(320) not null, "action" text not null, "reason" text not null, "api_key_id" varchar(24) null, "email_id" varchar(24) null, "detail" varchar(1024) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "suppression_changes_org_id_index" on "suppression_changes" ("org_id");`);
    this.addSql(`create index "suppression_changes_org_id_created_at_id_index" on "suppression_changes" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "suppression_changes" add constraint "suppression_changes_action_check" check ("action" in ('added', 'removed'));`);
    this.addSql(`alter table "suppression_changes" add constraint "suppression_changes_reason_check" check ("reason" in ('hard_bounce', 'complaint', 'unsubscribe', 'manual'));`);
    this.addSql(`alter table "suppressions" drop constraint "suppressions_reason_check";`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_reason_check" check ("reason" in ('hard_bounce', 'complaint', 'unsubscribe', 'manual'));`);
    // The trail starts with what is on the list now.
    this.addSql(`insert into "suppression_changes" ("id", "org_id", "email", "action", "reason", "api_key_id", "email_id", "detail", "created_at")
                 select "id", "org_id", "email", 'added', "reason", null, "email_id", "detail", "created_at" from "suppressions";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "suppression_changes" cascade;`);
    this.addSql(`delete from "suppressions" where "reason" = 'unsubscribe';`);
    this.addSql(`alter table "suppressions" drop constraint "suppressions_reason_check";`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_reason_check" check ("reason" in ('hard_bounce', 'complaint', 'manual'));`);
  }

}
