import { Migration } from '@mikro-orm/migrations';

export class Migration20261125050000 extends Migration {

  override name = 'Migration20261125050000';

  override up(): void | Promise<void> {
    // Static segments: members listed through the API.
    this.addSql(`create table "segment_members" ("segment_id" varchar(24) not null, "contact_id" varchar(24) not null, "org_id" varchar(24) not null, "created_at" timestamptz not null, primary key ("segment_id", "contact_id"));`);
    this.addSql(`create index "segment_members_org_id_index" on "segment_members" ("org_id");`);
    this.addSql(`create index "segment_members_contact_id_index" on "segment_members" ("contact_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "segment_members" cascade;`);
  }

}
