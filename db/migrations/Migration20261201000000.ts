import { Migration } from '@mikro-orm/migrations';

/**
 * An idempotent replay answers with the first answer's bytes: `response_body` becomes `json`,
 * which keeps the text as written, where `jsonb` reordered its keys (a replayed POST /outbox/emails
 * listed its fields in another order than the first answer).
 */
export class Migration20261201000000 extends Migration {

  override name = 'Migration20261201000000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "idempotency_records" alter column "response_body" type json using "response_body"::json;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "idempotency_records" alter column "response_body" type jsonb using "response_body"::jsonb;`);
  }

}
