import { Migration } from '@mikro-orm/migrations';

export class Migration20261121073717 extends Migration {

  override name = 'Migration20261121073717';

  override up(): void | Promise<void> {
    this.addSql(`create table "webhook_attempts" ("id" varchar(24) not null, "org_id" varchar(24) not null, "delivery_id" varchar(24) not null, "series" int not null default 0, "attempt_number" int not null, "started_at" timestamptz not null, "status_code" int null, "latency_ms" int null, "error" varchar(1024) null, "response_excerpt" varchar(1024) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_attempts_org_id_index" on "webhook_attempts" ("org_id");`);
    this.addSql(`create index "webhook_attempts_delivery_id_index" on "webhook_attempts" ("delivery_id");`);
    this.addSql(`alter table "webhook_attempts" add constraint "webhook_attempts_delivery_id_series_attempt_number_unique" unique ("delivery_id", "series", "attempt_number");`);

    this.addSql(`create table "webhook_deliveries" ("id" varchar(24) not null, "org_id" varchar(24) not null, "webhook_id" varchar(24) not null, "event_id" varchar(24) not null, "event_type" varchar(100) not null, "status" text not null default 'queued', "attempt_count" int not null default 0, "replay_count" int not null default 0, "next_attempt_at" timestamptz null, "last_response_status" int null, "last_response_excerpt" varchar(1024) null, "last_error" varchar(1024) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_org_id_index" on "webhook_deliveries" ("org_id");`);
    this.addSql(`create index "webhook_deliveries_org_id_created_at_index" on "webhook_deliveries" ("org_id", "created_at");`);
    this.addSql(`create index "webhook_deliveries_org_id_webhook_id_status_index" on "webhook_deliveries" ("org_id", "webhook_id", "status");`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_webhook_id_event_id_unique" unique ("webhook_id", "event_id");`);

    this.addSql(`create table "webhook_endpoints" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(200) not null, "url" varchar(2048) not null, "description" varchar(500) not null default '', "events" text[] not null default '{}', "enabled" boolean not null default true, "secret_encrypted" text not null, "key_mode" text not null, "disabled_reason" varchar(500) null, "disabled_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_endpoints_org_id_index" on "webhook_endpoints" ("org_id");`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('queued', 'delivering', 'delivered', 'failed', 'exhausted'));`);

    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_key_mode_check" check ("key_mode" in ('live', 'test'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "webhook_attempts" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }

}
