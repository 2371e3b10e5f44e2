import { Migration } from '@mikro-orm/migrations';

export class Migration20261124174040 extends Migration {

  override name = 'Migration20261124174040';

  override up(): void | Promise<void> {
    this.addSql(`create table "actor_leases" ("name" varchar(100) not null, "lease_until" timestamptz null, primary key ("name"));`);

    this.addSql(`drop index "inbound_messages_received_index";`);
    // Every row gets the migration's time: `received` rows (their per-message workflows may still
    // run) are due at once for the inbound actor; rows that omit the column later get now().
    this.addSql(`alter table "inbound_messages" add "next_attempt_at" timestamptz null default now();`);
    this.addSql(`create index "inbound_messages_due_index" on "inbound_messages" ("next_attempt_at", "id") where "status" = 'received';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "actor_leases" cascade;`);

    this.addSql(`drop index "inbound_messages_due_index";`);
    this.addSql(`alter table "inbound_messages" drop column "next_attempt_at";`);
    this.addSql(`create index "inbound_messages_received_index" on "inbound_messages" ("created_at") where "status" = 'received';`);
  }

}
