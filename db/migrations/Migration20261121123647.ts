import { Migration } from '@mikro-orm/migrations';

export class Migration20261121123647 extends Migration {

  override name = 'Migration20261121123647';

  override up(): void | Promise<void> {
    this.addSql(`alter table "inbound_messages" add "raw_deleted_at" timestamptz null;`);
    this.addSql(`create index "inbound_messages_raw_kept_index" on "inbound_messages" ("created_at") where "status" = 'ingested' and "raw_deleted_at" is null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "inbound_messages_raw_kept_index";`);
    this.addSql(`alter table "inbound_messages" drop column "raw_deleted_at";`);
  }

}
