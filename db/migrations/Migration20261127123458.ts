import { Migration } from '@mikro-orm/migrations';

/** Contacts' custom events (POST /api/v1/events), for automations' had_event conditions and goals. */
export class Migration20261127123458 extends Migration {

  override name = 'Migration20261127123458';

  override up(): void | Promise<void> {
    this.addSql(`create table "contact_events" ("id" varchar(24) not null, "org_id" varchar(24) not null, "contact_id" varchar(24) not null, "name" varchar(100) not null, "properties" jsonb not null default '{}', "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "contact_events_contact_index" on "contact_events" ("org_id", "contact_id", "name", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "contact_events" cascade;`);
  }

}
