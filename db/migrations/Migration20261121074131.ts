import { Migration } from '@mikro-orm/migrations';

export class Migration20261121074131 extends Migration {

  override name = 'Migration20261121074131';

  override up(): void | Promise<void> {
    this.addSql(`create index "events_unfanned_index" on "events" ("created_at", "id") where "fanned_out_at" is null;`);
    this.addSql(`create or replace function "events_events_notify_relay_fn"() returns trigger as \$\$ begin perform pg_notify('herald_events', ''); return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "events_notify_relay" AFTER INSERT on "events" for each STATEMENT execute function "events_events_notify_relay_fn"();`);

    this.addSql(`create index "webhook_deliveries_queued_index" on "webhook_deliveries" ("updated_at") where "status" = 'queued';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "events_unfanned_index";`);
    this.addSql(`drop trigger if exists "events_notify_relay" on "events";`);
    this.addSql(`drop function if exists "events_events_notify_relay_fn"();`);

    this.addSql(`drop index "webhook_deliveries_queued_index";`);
  }

}
