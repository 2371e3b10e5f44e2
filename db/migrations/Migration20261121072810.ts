import { Migration } from '@mikro-orm/migrations';

export class Migration20261121072810 extends Migration {

  override name = 'Migration20261121072810';

  override up(): void | Promise<void> {
    this.addSql(`create table "email_event_counts" ("org_id" varchar(24) not null, "day" date not null, "broadcast_id" varchar(24) not null default '', "domain" varchar(253) not null, "type" text not null, "count" bigint not null, primary key ("org_id", "day", "broadcast_id", "domain", "type"));`);

    this.addSql(`alter table "email_event_counts" add constraint "email_event_counts_type_check" check ("type" in ('sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);

    // Backfill: the rollup starts equal to the events already recorded.
    this.addSql(`insert into "email_event_counts" ("org_id", "day", "broadcast_id", "domain", "type", "count") select "org_id", ("occurred_at" at time zone 'UTC')::date, coalesce("broadcast_id", ''), "domain", "type", count(*) from "email_events" group by 1, 2, 3, 4, 5;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "email_event_counts" cascade;`);
  }

}
