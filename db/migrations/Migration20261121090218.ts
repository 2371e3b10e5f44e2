import { Migration } from '@mikro-orm/migrations';

export class Migration20261121090218 extends Migration {

  override name = 'Migration20261121090218';

  override up(): void | Promise<void> {
    this.addSql(`create index "inbox_messages_org_id_in_reply_to_id_index" on "inbox_messages" ("org_id", "in_reply_to_id") where "in_reply_to_id" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "inbox_messages_org_id_in_reply_to_id_index";`);
  }

}
