import { Migration } from '@mikro-orm/migrations';

/**
 * email_recipients loses its index on org_id alone: the (org_id, email) index serves the same
 * lookups, each recipient row written is one index insertion cheaper, and PostgreSQL can no
 * longer combine it with the (email_id, email) index in a plan that scans every recipient row of
 * the workspace to find one email's (what it did without fresh statistics, decisions.md).
 */
export class Migration20261126000000 extends Migration {

  override name = 'Migration20261126000000';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "email_recipients_org_id_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index "email_recipients_org_id_index" on "email_recipients" ("org_id");`);
  }

}
