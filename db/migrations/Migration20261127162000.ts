import { Migration } from '@mikro-orm/migrations';

/** Which encryption key the database's sealed values are under (a process with another key refuses to start). */
export class Migration20261127162000 extends Migration {

  override name = 'Migration20261127162000';

  override up(): void | Promise<void> {
    this.addSql(`create table "encryption_key_checks" ("name" varchar(64) not null, "key_id" varchar(16) not null, "sealed_check" text not null, "updated_at" timestamptz not null, primary key ("name"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "encryption_key_checks" cascade;`);
  }

}
