import { Migration } from '@mikro-orm/migrations';

/** Broadcast open and click tracking: the per-broadcast switch and the hits judged by the worker's tracking counter. */
export class Migration20261125120000 extends Migration {

  override name = 'Migration20261125120000';

  override up(): void | Promise<void> {
    this.addSql(`create table "tracking_hits" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email_id" varchar(24) not null, "broadcast_id" varchar(24) not null, "kind" text not null, "url" varchar(2048) null, "user_agent" varchar(512) null, "state" text not null default 'pending', "at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "tracking_hits_email_id_at_index" on "tracking_hits" ("email_id", "at");`);
    this.addSql(`create index "tracking_hits_pending_index" on "tracking_hits" ("at", "id") where "state" = 'pending';`);
    this.addSql(`alter table "tracking_hits" add constraint "tracking_hits_kind_check" check ("kind" in ('open', 'click'));`);
    this.addSql(`alter table "tracking_hits" add constraint "tracking_hits_state_check" check ("state" in ('pending', 'counted', 'repeat', 'flagged'));`);

    this.addSql(`alter table "broadcasts" add "tracking" boolean not null default true;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "broadcasts" drop column "tracking";`);
    this.addSql(`drop table if exists "tracking_hits" cascade;`);
  }

}
