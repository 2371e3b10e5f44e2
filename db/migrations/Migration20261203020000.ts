import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook deliveries: fewer index entries per delivery and a claim that reads no attempt log.
 *
 * - The unique (webhook_id, event_id) becomes (event_id, webhook_id) and takes over the index on
 *   event_id alone (the events' retention looks deliveries up by event): one index fewer, written
 *   at the insert, the claim and the record of every delivery (neither update is HOT: status is
 *   in the partial indexes' predicates). The fan-out's `on conflict (webhook_id, event_id)` infers
 *   the new index (column order does not matter to inference).
 * - `series_attempts`: the attempts on record in the current series, kept by the attempt record
 *   and reset by a replay, so the claim no longer looks up webhook_attempts per row. Open rows get
 *   theirs from the attempt log (settled rows start a new series, at 0, when replayed).
 *
 * Building the unique index reads the whole table and blocks its writes meanwhile (CHANGELOG).
 */
export class Migration20261203020000 extends Migration {

  override name = 'Migration20261203020000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" add "series_attempts" int not null default 0;`);
    this.addSql(`update "webhook_deliveries" d set "series_attempts" = s.n
      from (select o.id, (select max(a.attempt_number) from "webhook_attempts" a
                           where a.delivery_id = o.id and a.series = o.replay_count) as n
              from "webhook_deliveries" o where o.status in ('queued', 'failed', 'delivering')) s
     where d.id = s.id and s.n is not null;`);
    this.addSql(`create unique index "webhook_deliveries_event_id_webhook_id_unique" on "webhook_deliveries" ("event_id", "webhook_id");`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_webhook_id_unique" unique using index "webhook_deliveries_event_id_webhook_id_unique";`);
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_webhook_id_event_id_unique";`);
    this.addSql(`drop index "webhook_deliveries_event_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index "webhook_deliveries_event_index" on "webhook_deliveries" ("event_id");`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_webhook_id_event_id_unique" unique ("webhook_id", "event_id");`);
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_event_id_webhook_id_unique";`);
    this.addSql(`alter table "webhook_deliveries" drop column "series_attempts";`);
  }

}
