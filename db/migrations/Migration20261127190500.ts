import { Migration } from '@mikro-orm/migrations';

/** DMARC aggregate reports received at a domain's report address, their records, and custom report addresses. */
export class Migration20261127190500 extends Migration {

  override name = 'Migration20261127190500';

  override up(): void | Promise<void> {
    this.addSql(`create table "dmarc_reports" ("id" varchar(24) not null, "org_id" varchar(24) not null, "domain_id" varchar(24) not null, "reporter_org" varchar(255) not null, "reporter_email" varchar(255) not null, "report_id" varchar(255) not null, "policy_domain" varchar(253) not null, "policy" jsonb not null default '{}', "date_begin" timestamptz not null, "date_end" timestamptz not null, "record_count" int not null, "message_count" bigint not null, "inbound_id" varchar(24) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "dmarc_reports_org_id_domain_id_created_at_id_index" on "dmarc_reports" ("org_id", "domain_id", "created_at", "id");`);
    this.addSql(`alter table "dmarc_reports" add constraint "dmarc_reports_report_unique" unique ("domain_id", "reporter_org", "report_id");`);
    this.addSql(`create table "dmarc_records" ("id" varchar(24) not null, "org_id" varchar(24) not null, "report_id" varchar(24) not null, "domain_id" varchar(24) not null, "date_end" timestamptz not null, "source_ip" varchar(45) not null, "count" bigint not null, "disposition" varchar(32) not null, "dkim_aligned" boolean not null, "spf_aligned" boolean not null, "dmarc_pass" boolean not null, "header_from" varchar(255) not null, "envelope_from" varchar(255) null, "auth_results" jsonb not null default '{}', primary key ("id"));`);
    this.addSql(`create index "dmarc_records_report_id_index" on "dmarc_records" ("report_id");`);
    this.addSql(`create index "dmarc_records_org_id_domain_id_source_ip_date_end_index" on "dmarc_records" ("org_id", "domain_id", "source_ip", "date_end");`);
    this.addSql(`create table "dmarc_addresses" ("domain_id" varchar(24) not null, "org_id" varchar(24) not null, "local_part" varchar(64) not null, "updated_at" timestamptz not null, primary key ("domain_id"));`);
    this.addSql(`create index "dmarc_addresses_org_id_index" on "dmarc_addresses" ("org_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "dmarc_addresses" cascade;`);
    this.addSql(`drop table if exists "dmarc_records" cascade;`);
    this.addSql(`drop table if exists "dmarc_reports" cascade;`);
  }

}
