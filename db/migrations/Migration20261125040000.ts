import { Migration } from '@mikro-orm/migrations';

export class Migration20261125040000 extends Migration {

  override name = 'Migration20261125040000';

  override up(): void | Promise<void> {
    // Secret rotation: the replaced secret keeps signing until the overlap ends.
    this.addSql(`alter table "webhook_endpoints" add "previous_secret_encrypted" text null, add "previous_secret_expires_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" drop column "previous_secret_encrypted", drop column "previous_secret_expires_at";`);
  }

}
