import { Migration } from '@mikro-orm/migrations';

export class Migration20261124144513 extends Migration {

  override name = 'Migration20261124144513';

  override up(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_open_index";`);
    this.addSql(`drop index "webhook_deliveries_queued_index";`);
    this.addSql(`alter table "webhook_deliveries" add "lease_until" timestamptz null;`);
    this.addSql(`create index "webhook_deliveries_due_index" on "webhook_deliveries" ("webhook_id", "next_attempt_at", "id") where "status" in ('queued', 'failed');`);
    this.addSql(`create index "webhook_deliveries_delivering_index" on "webhook_deliveries" ("webhook_id", "lease_until") where "status" = 'delivering';`);

    this.addSql(`alter table "webhook_endpoints" add "drain_lease_until" timestamptz null;`);
    // Rows of the per-delivery workflows become queue rows: an attempt in flight at the upgrade
    // lapses like a dead drain's (abandoned, then retried); every open row has a due time.
    this.addSql(`update "webhook_deliveries" set "lease_until" = "updated_at" + interval '75 seconds' where "status" = 'delivering';`);
    this.addSql(`update "webhook_deliveries" set "next_attempt_at" = "updated_at" where "status" in ('queued', 'failed') and "next_attempt_at" is null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_due_index";`);
    this.addSql(`drop index "webhook_deliveries_delivering_index";`);
    this.addSql(`alter table "webhook_deliveries" drop column "lease_until";`);
    this.addSql(`create index "webhook_deliveries_open_index" on "webhook_deliveries" ("updated_at", "id") where "status" in ('queued', 'failed', 'delivering');`);
    this.addSql(`create index "webhook_deliveries_queued_index" on "webhook_deliveries" ("updated_at") where "status" = 'queued';`);

    this.addSql(`alter table "webhook_endpoints" drop column "drain_lease_until";`);
  }

}
