import { Migration } from '@mikro-orm/migrations';

/** The date trigger of automations: one row per (automation, contact, local day it fired), so a contact is enrolled once per occurrence. */
export class Migration20261127170000 extends Migration {

  override name = 'Migration20261127170000';

  override up(): void | Promise<void> {
    this.addSql(`create table "automation_date_occurrences" ("automation_id" varchar(24) not null, "contact_id" varchar(24) not null, "occurs_on" date not null, "org_id" varchar(24) not null, "enrolled_at" timestamptz not null, primary key ("automation_id", "contact_id", "occurs_on"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "automation_date_occurrences" cascade;`);
  }

}
