import { Migration } from '@mikro-orm/migrations';

/** Egress IP pools: the pool a domain picked, and each source address's messages per UTC day (its warm-up). */
export class Migration20261127190200 extends Migration {

  override name = 'Migration20261127190200';

  override up(): void | Promise<void> {
    this.addSql(`alter table "domains" add column "ip_pool" varchar(63) null;`);
    this.addSql(`create table "egress_address_days" ("address" varchar(45) not null, "day" varchar(10) not null, "sent" int not null default 0, primary key ("address", "day"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "egress_address_days" cascade;`);
    this.addSql(`alter table "domains" drop column if exists "ip_pool";`);
  }

}
