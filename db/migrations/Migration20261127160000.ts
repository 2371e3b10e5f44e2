import { Migration } from '@mikro-orm/migrations';

/** Retention (docs/retention.md): an event is deleted only once no delivery of it is left, looked up by event id. */
export class Migration20261127160000 extends Migration {

  override name = 'Migration20261127160000';

  override up(): void | Promise<void> {
    this.addSql(`create index "webhook_deliveries_event_index" on "webhook_deliveries" ("event_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_event_index";`);
  }

}
