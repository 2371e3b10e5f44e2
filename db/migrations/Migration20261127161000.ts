import { Migration } from '@mikro-orm/migrations';

/**
 * The dashboard's contact search: a trigram index over the email and name (lower case), so a
 * part of either is found without reading the workspace's contacts one by one. pg_trgm is a
 * trusted extension (PostgreSQL 13+): a database owner can create it without superuser.
 */
export class Migration20261127161000 extends Migration {

  override name = 'Migration20261127161000';

  override up(): void | Promise<void> {
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`create index "contacts_search_index" on "contacts" using gin ((lower("email" || ' ' || "first_name" || ' ' || "last_name")) gin_trgm_ops);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_search_index";`);
  }

}
