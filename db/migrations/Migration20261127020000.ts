import { Migration } from '@mikro-orm/migrations';

/**
 * A domain name may be added by several workspaces (adding one must not reveal that another
 * workspace holds it); only one may hold it proven (verified or attention), which is what
 * inbound routing and sending rely on.
 */
export class Migration20261127020000 extends Migration {

  override name = 'Migration20261127020000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "domains" drop constraint "domains_domain_unique";`);
    this.addSql(`alter table "domains" add constraint "domains_org_id_domain_unique" unique ("org_id", "domain");`);
    this.addSql(`create unique index "domains_domain_proven_unique" on "domains" ("domain") where "status" != 'pending';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "domains_domain_proven_unique";`);
    this.addSql(`alter table "domains" drop constraint "domains_org_id_domain_unique";`);
    this.addSql(`alter table "domains" add constraint "domains_domain_unique" unique ("domain");`);
  }

}
