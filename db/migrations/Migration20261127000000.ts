import { Migration } from '@mikro-orm/migrations';

/** A key made by a key through the API remembers its parent, so revoking the parent revokes it. */
export class Migration20261127000000 extends Migration {

  override name = 'Migration20261127000000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "api_keys" add "parent_key_id" varchar(24) null;`);
    this.addSql(`create index "api_keys_parent_key_id_index" on "api_keys" ("parent_key_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "api_keys_parent_key_id_index";`);
    this.addSql(`alter table "api_keys" drop column "parent_key_id";`);
  }

}
