import { Migration } from '@mikro-orm/migrations';

export class Migration20261121103841 extends Migration {

  override name = 'Migration20261121103841';

  override up(): void | Promise<void> {
    this.addSql(`create index "webhook_deliveries_open_index" on "webhook_deliveries" ("updated_at", "id") where "status" in ('queued', 'failed', 'delivering');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_open_index";`);
  }

}
