import { Migration } from '@mikro-orm/migrations';

export class Migration20261124222900 extends Migration {

  override name = 'Migration20261124222900';

  override up(): void | Promise<void> {
    // A send rendered from a stored template records which one, at which version.
    this.addSql(`alter table "transactional_emails" add "template_id" varchar(24) null, add "template_version" int null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "transactional_emails" drop column "template_id", drop column "template_version";`);
  }

}
