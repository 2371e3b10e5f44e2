import { Migration } from '@mikro-orm/migrations';

export class Migration20261124233500 extends Migration {

  override name = 'Migration20261124233500';

  override up(): void | Promise<void> {
    // API keys created through the API may expire.
    this.addSql(`alter table "api_keys" add "expires_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "api_keys" drop column "expires_at";`);
  }

}
