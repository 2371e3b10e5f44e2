import { Migration } from '@mikro-orm/migrations';

export class Migration20261121071129 extends Migration {

  override name = 'Migration20261121071129';

  override up(): void | Promise<void> {
    this.addSql(`create table "email_events" ("id" varchar(24) not null, "org_id" varchar(24) not null, "type" text not null, "email_id" varchar(24) null, "broadcast_id" varchar(24) null, "recipient" varchar(320) not null, "domain" varchar(253) not null, "occurred_at" timestamptz not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "email_events_org_id_occurred_at_type_index" on "email_events" ("org_id", "occurred_at", "type");`);
    this.addSql(`create index "email_events_org_id_broadcast_id_type_index" on "email_events" ("org_id", "broadcast_id", "type");`);

    this.addSql(`alter table "domains" add "dns_check" jsonb not null default '{}', add "last_checked_at" timestamptz null;`);

    this.addSql(`alter table "email_events" add constraint "email_events_type_check" check ("type" in ('sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "email_events" cascade;`);

    this.addSql(`alter table "domains" drop column "dns_check", drop column "last_checked_at";`);
  }

}
