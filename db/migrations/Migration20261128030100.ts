import { Migration } from '@mikro-orm/migrations';

/**
 * GET /contacts?search= (a prefix of the email, the full name or the last name, any case): one
 * b-tree per expression, led by the workspace, with text_pattern_ops so `like 'abc%'` is a
 * range scan whatever the database's collation. PostgreSQL ORs the three (BitmapOr) for a rare
 * prefix, or walks (org_id, created_at, id) for a common one.
 */
export class Migration20261128030100 extends Migration {

  override name = 'Migration20261128030100';

  override up(): void | Promise<void> {
    this.addSql(`create index "contacts_email_prefix_index" on "contacts" ("org_id", lower("email") text_pattern_ops);`);
    this.addSql(`create index "contacts_full_name_prefix_index" on "contacts" ("org_id", lower("first_name" || ' ' || "last_name") text_pattern_ops);`);
    this.addSql(`create index "contacts_last_name_prefix_index" on "contacts" ("org_id", lower("last_name") text_pattern_ops);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_email_prefix_index";`);
    this.addSql(`drop index if exists "contacts_full_name_prefix_index";`);
    this.addSql(`drop index if exists "contacts_last_name_prefix_index";`);
  }

}
