import { Migration } from '@mikro-orm/migrations';

export class Migration20261121062554 extends Migration {

  override name = 'Migration20261121062554';

  override up(): void | Promise<void> {
    this.addSql(`create table "api_keys" ("id" varchar(24) not null, "org_id" varchar(24) not null, "user_id" varchar(24) not null, "name" varchar(200) not null, "prefix" varchar(32) not null, "secret_hash" varchar(64) not null, "mode" text not null, "audience" varchar(32) not null default 'public_api', "scopes" text[] not null default '{}', "rate_limit_per_minute" int null, "rate_limit_burst" int null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "api_keys_org_id_index" on "api_keys" ("org_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_prefix_unique" unique ("prefix");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_mode_check" check ("mode" in ('live', 'test'));`);

    this.addSql(`create table "automations" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(120) not null, "description" varchar(2000) not null default '', "status" text not null default 'draft', "trigger_type" varchar(100) not null, "stats" jsonb not null default '{"totalRuns":0,"activeRuns":0,"completedRuns":0,"failedRuns":0,"emailsSent":0,"creditsUsed":0}', "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "automations_org_id_index" on "automations" ("org_id");`);
    this.addSql(`alter table "automations" add constraint "automations_status_check" check ("status" in ('draft', 'active', 'paused', 'archived'));`);

    this.addSql(`create table "broadcasts" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(200) not null, "subject" varchar(500) not null, "preview_text" varchar(200) not null default '', "from_name" varchar(100) not null, "from_email" varchar(320) not null, "reply_to" varchar(320) null, "segment_ids" text[] not null default '{}', "html" text not null default '', "plain_text" text not null default '', "status" varchar(32) not null default 'draft', "scheduled_at" timestamptz null, "metrics" jsonb not null default '{}', "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "broadcasts_org_id_index" on "broadcasts" ("org_id");`);

    this.addSql(`create table "contacts" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email" varchar(320) not null, "first_name" varchar(200) not null default '', "last_name" varchar(200) not null default '', "company" varchar(200) not null default '', "tags" text[] not null default '{}', "custom_fields" jsonb not null default '{}', "status" text not null default 'active', "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "contacts_org_id_index" on "contacts" ("org_id");`);
    this.addSql(`create index "contacts_tags_index" on "contacts" using gin ("tags");`);
    this.addSql(`alter table "contacts" add constraint "contacts_org_id_email_unique" unique ("org_id", "email");`);
    this.addSql(`alter table "contacts" add constraint "contacts_status_check" check ("status" in ('active', 'unsubscribed', 'bounced', 'complained', 'suppressed'));`);

    this.addSql(`create table "domains" ("id" varchar(24) not null, "org_id" varchar(24) not null, "domain" varchar(253) not null, "status" text not null default 'pending', "is_default" boolean not null default false, "source" text not null default 'operator', "dkim_selector" varchar(63) not null default 'herald', "dkim_public_key" text not null, "dkim_private_key_encrypted" text not null, "daily_cap" int null, "reputation_state" text not null default 'healthy', "verified_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "domains_org_id_index" on "domains" ("org_id");`);
    this.addSql(`alter table "domains" add constraint "domains_domain_unique" unique ("domain");`);
    this.addSql(`alter table "domains" add constraint "domains_status_check" check ("status" in ('pending', 'verified', 'attention'));`);
    this.addSql(`alter table "domains" add constraint "domains_source_check" check ("source" in ('operator', 'dev'));`);
    this.addSql(`alter table "domains" add constraint "domains_reputation_state_check" check ("reputation_state" in ('healthy', 'recovery'));`);

    this.addSql(`create table "events" ("id" varchar(24) not null, "org_id" varchar(24) not null, "type" varchar(100) not null, "api_version" varchar(16) not null default '1.0.0', "data" jsonb not null, "fanned_out_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "events_org_id_index" on "events" ("org_id");`);
    this.addSql(`create index "events_org_id_type_created_at_index" on "events" ("org_id", "type", "created_at");`);

    this.addSql(`create table "idempotency_records" ("id" varchar(24) not null, "org_id" varchar(24) not null, "api_key_id" varchar(24) not null, "key" varchar(128) not null, "fingerprint" varchar(64) not null, "state" text not null default 'running', "response_status" int null, "response_body" jsonb null, "created_at" timestamptz not null, "expires_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "idempotency_records_org_id_index" on "idempotency_records" ("org_id");`);
    this.addSql(`create index "idempotency_records_expires_at_index" on "idempotency_records" ("expires_at");`);
    this.addSql(`alter table "idempotency_records" add constraint "idempotency_records_org_id_api_key_id_key_unique" unique ("org_id", "api_key_id", "key");`);
    this.addSql(`alter table "idempotency_records" add constraint "idempotency_records_state_check" check ("state" in ('running', 'completed'));`);

    this.addSql(`create table "organizations" ("id" varchar(24) not null, "name" varchar(200) not null, "slug" varchar(100) not null, "credit_balance" int not null default 0, "overage_enabled" boolean not null default false, "rate_limit_per_minute" int null, "rate_limit_burst" int null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "organizations" add constraint "organizations_slug_unique" unique ("slug");`);

    this.addSql(`create table "segments" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(120) not null, "description" varchar(500) not null default '', "type" varchar(32) not null default 'tag', "tags" text[] not null default '{}', "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "segments_org_id_index" on "segments" ("org_id");`);

    this.addSql(`create table "sender_identities" ("id" varchar(24) not null, "org_id" varchar(24) not null, "domain_id" varchar(24) not null, "email" varchar(320) not null, "name" varchar(200) not null, "is_default" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "sender_identities_org_id_index" on "sender_identities" ("org_id");`);
    this.addSql(`create index "sender_identities_domain_id_index" on "sender_identities" ("domain_id");`);
    this.addSql(`alter table "sender_identities" add constraint "sender_identities_org_id_email_unique" unique ("org_id", "email");`);

    this.addSql(`create table "templates" ("id" varchar(24) not null, "org_id" varchar(24) not null, "name" varchar(200) not null, "description" varchar(500) not null default '', "subject" varchar(500) not null default '', "preview_text" varchar(200) not null default '', "html" text not null default '', "category" text not null default 'other', "tags" text[] not null default '{}', "folder_id" varchar(64) null, "status" text not null default 'draft', "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "templates_org_id_index" on "templates" ("org_id");`);
    this.addSql(`alter table "templates" add constraint "templates_category_check" check ("category" in ('marketing', 'transactional', 'newsletter', 'welcome', 'other'));`);
    this.addSql(`alter table "templates" add constraint "templates_status_check" check ("status" in ('draft', 'published', 'archived'));`);

    this.addSql(`create table "template_shares" ("id" varchar(24) not null, "org_id" varchar(24) not null, "template_id" varchar(24) not null, "hidden_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "template_shares_org_id_index" on "template_shares" ("org_id");`);
    this.addSql(`create index "template_shares_template_id_index" on "template_shares" ("template_id");`);
    this.addSql(`alter table "template_shares" add constraint "template_shares_template_id_org_id_unique" unique ("template_id", "org_id");`);

    this.addSql(`create table "users" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email" varchar(320) not null, "name" varchar(200) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "users_org_id_index" on "users" ("org_id");`);
    this.addSql(`alter table "users" add constraint "users_org_id_email_unique" unique ("org_id", "email");`);
  }

}
