import { Migration } from '@mikro-orm/migrations';

/**
 * Which imports touched a contact (created, updated or left it unchanged): one row per contact
 * and import, keyed by the contact first, so the contact's timeline reads its imports by index.
 */
export class Migration20261128030200 extends Migration {

  override name = 'Migration20261128030200';

  override up(): void | Promise<void> {
    this.addSql(`create table "contact_import_members" ("contact_id" varchar(24) not null, "import_id" varchar(24) not null, "org_id" varchar(24) not null, "outcome" varchar(16) not null, "created_at" timestamptz not null, primary key ("contact_id", "import_id"));`);
    this.addSql(`create index "contact_import_members_import_id_index" on "contact_import_members" ("import_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "contact_import_members" cascade;`);
  }

}
