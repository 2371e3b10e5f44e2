import { Migration } from '@mikro-orm/migrations';

export class Migration20261125080000 extends Migration {

  override name = 'Migration20261125080000';

  override up(): void | Promise<void> {
    // A contact import may add every imported contact to a static segment.
    this.addSql(`alter table "contact_imports" add column "segment_id" varchar(24) null, add column "added_to_segment" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "contact_imports" drop column "segment_id", drop column "added_to_segment";`);
  }

}
