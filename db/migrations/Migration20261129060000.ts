import { Migration } from '@mikro-orm/migrations';

/**
 * GET /contacts?status= and the dashboard's status filter (issue 34): a b-tree on (org_id,
 * status, created_at, id) of the contacts whose status is not `active`, the common one. A
 * rare status's page is read from it in order; with a search, tag or prefix, the few-matches
 * probe (contacts.repo.ts findFewMatches) reads their intersection through it instead of the
 * whole workspace. `active` is left out: its walk of (org_id, created_at, id) meets matches at
 * once, and the index stays small (writes of active contacts do not touch it).
 */
export class Migration20261129060000 extends Migration {

  override name = 'Migration20261129060000';

  override up(): void | Promise<void> {
    this.addSql(`create index "contacts_status_index" on "contacts" ("org_id", "status", "created_at", "id") where "status" <> 'active';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_status_index";`);
  }

}
