import { Migration } from '@mikro-orm/migrations';

export class Migration20261124230000 extends Migration {

  override name = 'Migration20261124230000';

  override up(): void | Promise<void> {
    // Threading by subject takes the 20 most recent threads of a subject: ordered by the index
    // instead of sorting every thread with that subject (a receipt has thousands).
    this.addSql(`create index "inbox_threads_org_id_normalized_subject_last_message_at_index" on "inbox_threads" ("org_id", "normalized_subject", "last_message_at");`);
    this.addSql(`drop index "inbox_threads_org_id_normalized_subject_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index "inbox_threads_org_id_normalized_subject_index" on "inbox_threads" ("org_id", "normalized_subject");`);
    this.addSql(`drop index "inbox_threads_org_id_normalized_subject_last_message_at_index";`);
  }

}
