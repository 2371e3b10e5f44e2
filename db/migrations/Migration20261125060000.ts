import { Migration } from '@mikro-orm/migrations';

export class Migration20261125060000 extends Migration {

  override name = 'Migration20261125060000';

  override up(): void | Promise<void> {
    // CSV imports of contacts and their per-row error reports.
    this.addSql(`create table "contact_imports" ("id" varchar(24) not null, "org_id" varchar(24) not null, "status" text not null default 'awaiting_upload', "filename" varchar(255) null, "blob_key" varchar(200) null, "size_bytes" bigint null, "sha256" varchar(64) null, "columns" text[] null, "total_rows" int null, "rows_done" int not null default 0, "created" int not null default 0, "updated" int not null default 0, "unchanged" int not null default 0, "skipped" int not null default 0, "byte_offset" bigint not null default '0', "lines_done" int not null default 0, "failure" jsonb null, "upload_expires_at" timestamptz not null, "uploaded_at" timestamptz null, "completed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "contact_imports_org_id_index" on "contact_imports" ("org_id");`);
    this.addSql(`create index "contact_imports_org_id_created_at_id_index" on "contact_imports" ("org_id", "created_at", "id");`);
    this.addSql(`alter table "contact_imports" add constraint "contact_imports_status_check" check ("status" in ('awaiting_upload', 'validating', 'importing', 'completed', 'failed'));`);
    this.addSql(`create table "contact_import_errors" ("import_id" varchar(24) not null, "row" int not null, "org_id" varchar(24) not null, "line" int not null, "email" varchar(320) not null default '', "reason" varchar(40) not null, "message" varchar(500) not null, primary key ("import_id", "row"));`);
    this.addSql(`create index "contact_import_errors_org_id_index" on "contact_import_errors" ("org_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "contact_import_errors" cascade;`);
    this.addSql(`drop table if exists "contact_imports" cascade;`);
  }

}
