import { Migration } from '@mikro-orm/migrations';

/**
 * Fewer index entries per send. The one-by-one due index no longer holds mail of
 * transactional-kind streams, which the priority index holds (the claim reads each half from its
 * own index): a transactional send was written into both at acceptance and again at its claim.
 * The events' (workspace, broadcast, type) index holds broadcast messages' events only: a
 * transactional send's email.sent and email.delivered rows wrote a null broadcast entry each.
 */
export class Migration20261201010000 extends Migration {

  override name = 'Migration20261201010000';

  override up(): void | Promise<void> {
    this.addSql(`drop index "transactional_emails_due_index";`);
    this.addSql(`create index "transactional_emails_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending') and "broadcast_id" is null and "stream_kind" != 'transactional';`);
    this.addSql(`drop index "email_events_org_id_broadcast_id_type_index";`);
    this.addSql(`create index "email_events_org_id_broadcast_id_type_index" on "email_events" ("org_id", "broadcast_id", "type") where "broadcast_id" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "email_events_org_id_broadcast_id_type_index";`);
    this.addSql(`create index "email_events_org_id_broadcast_id_type_index" on "email_events" ("org_id", "broadcast_id", "type");`);
    this.addSql(`drop index "transactional_emails_due_index";`);
    this.addSql(`create index "transactional_emails_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending') and "broadcast_id" is null;`);
  }

}
