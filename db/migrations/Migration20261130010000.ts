import { Migration } from '@mikro-orm/migrations';

/**
 * `herald_refuse(detail)`: raises SQLSTATE HR001 with `detail` (a JSON text) as the error's
 * detail. A statement that must not commit on an outcome it computes itself (a send's
 * acceptance when its credits or its domain's warm-up cap refuse it) calls it, so that the
 * COMMIT sent in the same round trip (db/short-transaction.ts) never runs; the caller reads the
 * refusal's figures back from the detail.
 */
export class Migration20261130010000 extends Migration {

  override name = 'Migration20261130010000';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function herald_refuse(detail text) returns boolean language plpgsql volatile as $$
begin
  raise exception using errcode = 'HR001', message = 'herald_refuse', detail = detail;
end
$$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists herald_refuse(text);`);
  }

}
