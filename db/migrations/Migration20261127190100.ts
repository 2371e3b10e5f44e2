import { Migration } from '@mikro-orm/migrations';

/**
 * Message streams: the streams table and per-stream daily counters, the stream of every email
 * (broadcast and automation messages already written are `broadcast`), the stream scope of
 * suppressions ('' = every stream, so one address may be listed once per scope) and the
 * stream filter of webhook endpoints.
 */
export class Migration20261127190100 extends Migration {

  override name = 'Migration20261127190100';

  override up(): void | Promise<void> {
    this.addSql(`create table "message_streams" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(64) not null, "kind" text not null, "description" varchar(500) not null default '', "daily_cap" int null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "message_streams" add constraint "message_streams_org_id_name_unique" unique ("org_id", "name");`);

    this.addSql(`create table "stream_daily_sends" ("org_id" varchar(24) not null, "stream" varchar(64) not null, "day" varchar(10) not null, "count" int not null default 0, primary key ("org_id", "stream", "day"));`);

    this.addSql(`alter table "suppressions" drop constraint "suppressions_org_id_email_unique";`);
    this.addSql(`alter table "suppressions" add "stream" varchar(64) not null default '';`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_org_id_email_stream_unique" unique ("org_id", "email", "stream");`);

    this.addSql(`alter table "suppression_changes" add "stream" varchar(64) not null default '';`);

    this.addSql(`alter table "transactional_emails" add "stream" varchar(64) not null default 'transactional', add "stream_kind" varchar(16) not null default 'transactional';`);
    this.addSql(`update "transactional_emails" set "stream" = 'broadcast', "stream_kind" = 'broadcast' where "broadcast_id" is not null or "automation_run_id" is not null;`);
    this.addSql(`create index "transactional_emails_priority_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending') and "broadcast_id" is null and "stream_kind" = 'transactional';`);

    this.addSql(`alter table "webhook_endpoints" add "streams" text[] null;`);

    this.addSql(`alter table "message_streams" add constraint "message_streams_kind_check" check ("kind" in ('transactional', 'broadcast'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "message_streams" cascade;`);
    this.addSql(`drop table if exists "stream_daily_sends" cascade;`);

    this.addSql(`alter table "suppression_changes" drop column "stream";`);

    this.addSql(`alter table "suppressions" drop constraint "suppressions_org_id_email_stream_unique";`);
    this.addSql(`alter table "suppressions" drop column "stream";`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_org_id_email_unique" unique ("org_id", "email");`);

    this.addSql(`drop index "transactional_emails_priority_due_index";`);
    this.addSql(`alter table "transactional_emails" drop column "stream", drop column "stream_kind";`);

    this.addSql(`alter table "webhook_endpoints" drop column "streams";`);
  }

}
