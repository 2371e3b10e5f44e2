import { Migration } from '@mikro-orm/migrations';

export class Migration20261121084449 extends Migration {

  override name = 'Migration20261121084449';

  override up(): void | Promise<void> {
    this.addSql(`create table "attachment_uploads" ("id" varchar(24) not null, "org_id" varchar(24) not null, "filename" varchar(512) not null, "content_type" varchar(255) not null, "size_bytes" int not null, "status" text not null default 'pending', "blob_key" varchar(200) not null, "sha256" varchar(64) null, "expires_at" timestamptz not null, "uploaded_at" timestamptz null, "referenced_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "attachment_uploads_org_id_index" on "attachment_uploads" ("org_id");`);
    this.addSql(`create index "attachment_uploads_unreferenced_index" on "attachment_uploads" ("created_at") where "referenced_at" is null;`);

    this.addSql(`create table "domain_daily_sends" ("domain_id" varchar(24) not null, "day" varchar(10) not null, "org_id" varchar(24) not null, "count" int not null default 0, primary key ("domain_id", "day"));`);

    this.addSql(`create table "email_recipients" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email_id" varchar(24) not null, "kind" text not null, "email" varchar(320) not null, "name" varchar(320) null, "status" text not null default 'queued', "attempts" int not null default 0, "last_response" varchar(1024) null, "last_response_code" int null, "bounce_type" varchar(10) null, "next_attempt_at" timestamptz null, "sent_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "email_recipients_org_id_index" on "email_recipients" ("org_id");`);
    this.addSql(`create index "email_recipients_org_id_email_index" on "email_recipients" ("org_id", "email");`);
    this.addSql(`alter table "email_recipients" add constraint "email_recipients_email_id_email_unique" unique ("email_id", "email");`);

    this.addSql(`create table "suppressions" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email" varchar(320) not null, "reason" text not null, "email_id" varchar(24) null, "detail" varchar(1024) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "suppressions_org_id_index" on "suppressions" ("org_id");`);
    this.addSql(`alter table "suppressions" add constraint "suppressions_org_id_email_unique" unique ("org_id", "email");`);

    this.addSql(`create table "transactional_emails" ("id" varchar(24) not null, "org_id" varchar(24) not null, "api_key_id" varchar(24) null, "domain_id" varchar(24) not null, "domain" varchar(253) not null, "from_email" varchar(320) not null, "from_name" varchar(320) null, "reply_to" varchar(320) null, "subject" varchar(998) not null, "html" text null, "text" text null, "headers" jsonb not null default '{}', "attachments" jsonb not null default '[]', "message_id" varchar(400) not null, "status" text not null, "scheduled_at" timestamptz null, "size_bytes" int not null default 0, "credits_charged" int not null default 0, "overage_charged" int not null default 0, "quota_released" boolean not null default false, "quota_day" varchar(10) not null, "handoff_attempts" int not null default 0, "last_error" varchar(1024) null, "sent_at" timestamptz null, "settled_at" timestamptz null, "cancelled_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "transactional_emails_org_id_index" on "transactional_emails" ("org_id");`);
    this.addSql(`alter table "transactional_emails" add constraint "transactional_emails_message_id_unique" unique ("message_id");`);
    this.addSql(`create index "transactional_emails_org_id_created_at_index" on "transactional_emails" ("org_id", "created_at");`);
    this.addSql(`create index "transactional_emails_open_index" on "transactional_emails" ("updated_at") where "status" in ('scheduled', 'queued', 'sending');`);

    this.addSql(`alter table "email_events" drop constraint "email_events_type_check";`);
    this.addSql(`alter table "email_events" add constraint "email_events_type_check" check ("type" in ('sent', 'delivered', 'deferred', 'failed', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);

    this.addSql(`alter table "email_event_counts" drop constraint "email_event_counts_type_check";`);
    this.addSql(`alter table "email_event_counts" add constraint "email_event_counts_type_check" check ("type" in ('sent', 'delivered', 'deferred', 'failed', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);

    this.addSql(`alter table "attachment_uploads" add constraint "attachment_uploads_status_check" check ("status" in ('pending', 'uploaded'));`);

    this.addSql(`alter table "email_recipients" add constraint "email_recipients_kind_check" check ("kind" in ('to', 'cc', 'bcc'));`);
    this.addSql(`alter table "email_recipients" add constraint "email_recipients_status_check" check ("status" in ('queued', 'sent', 'delivered', 'deferred', 'bounced', 'complained', 'failed', 'cancelled'));`);

    this.addSql(`alter table "suppressions" add constraint "suppressions_reason_check" check ("reason" in ('hard_bounce', 'complaint', 'manual'));`);

    this.addSql(`alter table "transactional_emails" add constraint "transactional_emails_status_check" check ("status" in ('scheduled', 'queued', 'sending', 'sent', 'failed', 'cancelled'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "attachment_uploads" cascade;`);
    this.addSql(`drop table if exists "domain_daily_sends" cascade;`);
    this.addSql(`drop table if exists "email_recipients" cascade;`);
    this.addSql(`drop table if exists "suppressions" cascade;`);
    this.addSql(`drop table if exists "transactional_emails" cascade;`);

    this.addSql(`alter table "email_event_counts" drop constraint "email_event_counts_type_check";`);
    this.addSql(`alter table "email_event_counts" add constraint "email_event_counts_type_check" check ("type" in ('sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);

    this.addSql(`alter table "email_events" drop constraint "email_events_type_check";`);
    this.addSql(`alter table "email_events" add constraint "email_events_type_check" check ("type" in ('sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'));`);
  }

}
