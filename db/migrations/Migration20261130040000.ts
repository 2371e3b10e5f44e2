import { Migration } from '@mikro-orm/migrations';

/**
 * `webhook_attempts_delivery_id_index` (delivery_id) repeated the leading column of the unique
 * (delivery_id, series, attempt_number) index, which already answers every lookup by delivery;
 * each attempt record paid for both on insert. The unique index stays.
 */
export class Migration20261130040000 extends Migration {

  override name = 'Migration20261130040000';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "webhook_attempts_delivery_id_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index if not exists "webhook_attempts_delivery_id_index" on "webhook_attempts" ("delivery_id");`);
  }

}
