import { Migration } from '@mikro-orm/migrations';

/** Test keys are a sandbox: their emails and broadcasts are marked and go to the sandbox relay. */
export class Migration20261127030000 extends Migration {

  override name = 'Migration20261127030000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "transactional_emails" add "sandbox" boolean not null default false;`);
    this.addSql(`alter table "broadcasts" add "sandbox" boolean not null default false;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "broadcasts" drop column "sandbox";`);
    this.addSql(`alter table "transactional_emails" drop column "sandbox";`);
  }

}
