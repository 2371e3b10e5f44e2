import { Migration } from '@mikro-orm/migrations';

/**
 * Credits and the warm-up counter in shard rows, so concurrent sends of one workspace lock one
 * of eight rows instead of all queueing on the workspace's row. Balances are spread evenly over
 * eight shards; overage used so far goes to shard 0; existing counters and emails are shard 0.
 */
export class Migration20261125090000 extends Migration {

  override name = 'Migration20261125090000';

  override up(): void | Promise<void> {
    this.addSql(`create table "credit_shards" ("org_id" varchar(24) not null, "shard" smallint not null, "balance" int not null default 0, "overage_used" int not null default 0, primary key ("org_id", "shard"));`);
    this.addSql(`insert into "credit_shards" ("org_id", "shard", "balance", "overage_used")
      select o.id, g.shard, o.credit_balance / 8 + case when g.shard < o.credit_balance % 8 then 1 else 0 end, case when g.shard = 0 then o.overage_used else 0 end
        from "organizations" o cross join generate_series(0, 7) as g(shard);`);
    this.addSql(`alter table "organizations" drop column "credit_balance", drop column "overage_used";`);

    this.addSql(`alter table "domain_daily_sends" drop constraint "domain_daily_sends_pkey";`);
    this.addSql(`alter table "domain_daily_sends" add "shard" smallint not null default 0;`);
    this.addSql(`alter table "domain_daily_sends" add primary key ("domain_id", "day", "shard");`);

    this.addSql(`alter table "transactional_emails" add "quota_shard" smallint not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "transactional_emails" drop column "quota_shard";`);

    this.addSql(`update "domain_daily_sends" d set "count" = s.total
      from (select "domain_id", "day", sum("count")::int as total from "domain_daily_sends" group by 1, 2) s
     where d."domain_id" = s."domain_id" and d."day" = s."day" and d."shard" = 0;`);
    this.addSql(`insert into "domain_daily_sends" ("domain_id", "day", "shard", "org_id", "count")
      select "domain_id", "day", 0, min("org_id"), sum("count")::int from "domain_daily_sends" group by 1, 2
      on conflict do nothing;`);
    this.addSql(`delete from "domain_daily_sends" where "shard" <> 0;`);
    this.addSql(`alter table "domain_daily_sends" drop constraint "domain_daily_sends_pkey";`);
    this.addSql(`alter table "domain_daily_sends" drop column "shard";`);
    this.addSql(`alter table "domain_daily_sends" add primary key ("domain_id", "day");`);

    this.addSql(`alter table "organizations" add column "credit_balance" int not null default 0, add column "overage_used" int not null default 0;`);
    this.addSql(`update "organizations" o set "credit_balance" = s.balance, "overage_used" = s.overage
      from (select "org_id", sum("balance")::int as balance, sum("overage_used")::int as overage from "credit_shards" group by 1) s
     where o.id = s."org_id";`);
    this.addSql(`drop table "credit_shards";`);
  }

}
