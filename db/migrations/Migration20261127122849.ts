import { Migration } from '@mikro-orm/migrations';

/** Automations that run: published definitions, runs (the actors' queue), their timeline, re-entry, exact counters. */
export class Migration20261127122849 extends Migration {

  override name = 'Migration20261127122849';

  override up(): void | Promise<void> {
    this.addSql(`create table "automation_definitions" ("id" varchar(24) not null, "org_id" varchar(24) not null, "automation_id" varchar(24) not null, "version" int not null, "definition" jsonb not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "automation_definitions" add constraint "automation_definitions_automation_id_version_unique" unique ("automation_id", "version");`);

    this.addSql(`create table "automation_enrolments" ("automation_id" varchar(24) not null, "contact_id" varchar(24) not null, "org_id" varchar(24) not null, "last_enrolled_at" timestamptz not null, primary key ("automation_id", "contact_id"));`);

    this.addSql(`create table "automation_runs" ("id" varchar(24) not null, "org_id" varchar(24) not null, "automation_id" varchar(24) not null, "definition_id" varchar(24) not null, "contact_id" varchar(24) not null, "status" text not null default 'active', "step_id" varchar(64) null, "due_at" timestamptz null, "waiting_for" varchar(300) null, "context" jsonb not null default '{}', "lease_until" timestamptz null, "exit_reason" varchar(100) null, "error" varchar(1000) null, "ended_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "automation_runs_due_index" on "automation_runs" ("automation_id", "due_at") where "status" = 'active';`);
    this.addSql(`create index "automation_runs_list_index" on "automation_runs" ("automation_id", "created_at", "id");`);
    this.addSql(`create index "automation_runs_contact_index" on "automation_runs" ("org_id", "contact_id");`);

    this.addSql(`create table "automation_run_steps" ("id" varchar(24) not null, "org_id" varchar(24) not null, "run_id" varchar(24) not null, "step_id" varchar(64) not null, "kind" varchar(40) not null, "outcome" varchar(40) not null, "detail" jsonb not null default '{}', "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "automation_run_steps_run_index" on "automation_run_steps" ("run_id", "id");`);

    this.addSql(`create table "automation_stat_shards" ("automation_id" varchar(24) not null, "shard" smallint not null, "org_id" varchar(24) not null, "total_runs" int not null default 0, "active_runs" int not null default 0, "completed_runs" int not null default 0, "failed_runs" int not null default 0, "emails_sent" int not null default 0, "credits_used" int not null default 0, primary key ("automation_id", "shard"));`);

    this.addSql(`alter table "automations" add "definition_id" varchar(24) null, add "trigger_key" varchar(200) null, add "drain_lease_until" timestamptz null;`);
    this.addSql(`create index "automations_trigger_index" on "automations" ("org_id", "trigger_type", "trigger_key") where "status" = 'active';`);

    this.addSql(`alter table "transactional_emails" add "automation_run_id" varchar(24) null, add "automation_step_id" varchar(64) null;`);
    this.addSql(`create unique index "transactional_emails_automation_step_unique" on "transactional_emails" ("automation_run_id", "automation_step_id") where "automation_run_id" is not null;`);

    this.addSql(`alter table "automation_runs" add constraint "automation_runs_status_check" check ("status" in ('active', 'completed', 'failed', 'exited'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "automation_definitions" cascade;`);
    this.addSql(`drop table if exists "automation_enrolments" cascade;`);
    this.addSql(`drop table if exists "automation_runs" cascade;`);
    this.addSql(`drop table if exists "automation_run_steps" cascade;`);
    this.addSql(`drop table if exists "automation_stat_shards" cascade;`);

    this.addSql(`drop index "automations_trigger_index";`);
    this.addSql(`alter table "automations" drop column "definition_id", drop column "trigger_key", drop column "drain_lease_until";`);

    this.addSql(`drop index "transactional_emails_automation_step_unique";`);
    this.addSql(`alter table "transactional_emails" drop column "automation_run_id", drop column "automation_step_id";`);
  }

}
