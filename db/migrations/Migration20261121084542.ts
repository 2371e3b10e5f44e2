import { Migration } from '@mikro-orm/migrations';

export class Migration20261121084542 extends Migration {

  override name = 'Migration20261121084542';

  override up(): void | Promise<void> {
    this.addSql(`create table "inbound_messages" ("id" varchar(24) not null, "blob_key" varchar(200) not null, "size_bytes" int not null, "sha256" varchar(64) not null, "mail_from" varchar(320) not null default '', "rcpt_to" text[] not null default '{}', "remote_address" varchar(64) null, "client_hostname" varchar(253) null, "helo_name" varchar(253) null, "tls" boolean not null default false, "status" text not null default 'received', "attempts" int not null default 0, "last_error" varchar(1024) null, "ingested_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "inbound_messages_received_index" on "inbound_messages" ("created_at") where "status" = 'received';`);

    this.addSql(`create table "inbox_attachments" ("id" varchar(24) not null, "org_id" varchar(24) not null, "message_id" varchar(24) not null, "position" int not null, "filename" varchar(512) not null, "content_type" varchar(255) not null, "size_bytes" int not null default 0, "content_id" varchar(998) null, "status" text not null, "blob_key" varchar(200) null, "sha256" varchar(64) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "inbox_attachments_org_id_index" on "inbox_attachments" ("org_id");`);
    this.addSql(`alter table "inbox_attachments" add constraint "inbox_attachments_message_id_position_unique" unique ("message_id", "position");`);

    this.addSql(`create table "inbox_messages" ("id" varchar(24) not null, "org_id" varchar(24) not null, "thread_id" varchar(24) not null, "direction" text not null, "kind" text not null default 'message', "inbound_id" varchar(24) null, "email_id" varchar(24) null, "subject" varchar(998) not null default '', "text" text not null default '', "html" text null, "from_email" varchar(320) not null default '', "from_name" varchar(320) not null default '', "to" jsonb not null default '[]', "cc" jsonb not null default '[]', "rfc_message_id" varchar(998) null, "in_reply_to" varchar(998) null, "references" text[] not null default '{}', "in_reply_to_id" varchar(24) null, "attachment_ingest_status" text not null, "failed_attachments" jsonb not null default '[]', "attachment_count" int not null default 0, "attachments_ready" boolean not null default false, "auth_results" jsonb null, "sent_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "inbox_messages_org_id_index" on "inbox_messages" ("org_id");`);
    this.addSql(`create index "inbox_messages_org_id_updated_at_id_index" on "inbox_messages" ("org_id", "updated_at", "id");`);
    this.addSql(`create index "inbox_messages_org_id_rfc_message_id_index" on "inbox_messages" ("org_id", "rfc_message_id");`);
    this.addSql(`create index "inbox_messages_org_id_thread_id_created_at_index" on "inbox_messages" ("org_id", "thread_id", "created_at");`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_inbound_id_org_id_unique" unique ("inbound_id", "org_id");`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_email_id_unique" unique ("email_id");`);

    this.addSql(`create table "inbox_threads" ("id" varchar(24) not null, "org_id" varchar(24) not null, "subject" varchar(998) not null default '', "normalized_subject" varchar(998) not null default '', "participants" text[] not null default '{}', "message_count" int not null default 0, "last_message_at" timestamptz not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "inbox_threads_org_id_index" on "inbox_threads" ("org_id");`);
    this.addSql(`create index "inbox_threads_org_id_last_message_at_index" on "inbox_threads" ("org_id", "last_message_at");`);
    this.addSql(`create index "inbox_threads_org_id_normalized_subject_index" on "inbox_threads" ("org_id", "normalized_subject");`);

    this.addSql(`alter table "inbound_messages" add constraint "inbound_messages_status_check" check ("status" in ('received', 'ingested', 'failed'));`);

    this.addSql(`alter table "inbox_attachments" add constraint "inbox_attachments_status_check" check ("status" in ('stored', 'failed'));`);

    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_direction_check" check ("direction" in ('inbound', 'outbound'));`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_kind_check" check ("kind" in ('message', 'bounce', 'delay', 'complaint', 'auto_reply'));`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_attachment_ingest_status_check" check ("attachment_ingest_status" in ('pending', 'ready', 'partial_failure', 'unavailable'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "inbound_messages" cascade;`);
    this.addSql(`drop table if exists "inbox_attachments" cascade;`);
    this.addSql(`drop table if exists "inbox_messages" cascade;`);
    this.addSql(`drop table if exists "inbox_threads" cascade;`);
  }

}
