import { Migration } from '@mikro-orm/migrations';

export class Migration20261121085249 extends Migration {

  override name = 'Migration20261121085249';

  override up(): void | Promise<void> {
    this.addSql(`alter table "organizations" add "overage_used" int not null default 0;`);

    this.addSql(`alter table "transactional_emails" add "workflow_started_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "organizations" drop column "overage_used";`);

    this.addSql(`alter table "transactional_emails" drop column "workflow_started_at";`);
  }

}
