import { Migration } from '@mikro-orm/migrations';

/** Dashboard links have a kind: an invitation (as before) or an operator's one-use sign-in link. */
export class Migration20261126040000 extends Migration {

  override name = 'Migration20261126040000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "dashboard_invites" add "kind" varchar(16) not null default 'invite';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "dashboard_invites" drop column "kind";`);
  }

}
