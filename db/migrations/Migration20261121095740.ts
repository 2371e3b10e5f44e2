import { Migration } from '@mikro-orm/migrations';

export class Migration20261121095740 extends Migration {

  override name = 'Migration20261121095740';

  override up(): void | Promise<void> {
    this.addSql(`create index "contacts_org_id_created_at_id_index" on "contacts" ("org_id", "created_at", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "contacts_org_id_created_at_id_index";`);
  }

}
