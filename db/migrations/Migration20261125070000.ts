import { Migration } from '@mikro-orm/migrations';

/**
 * Tables whose composite indexes start with org_id: their single-column org_id index is
 * redundant. Not transactional_emails and email_recipients: without theirs the sending domain's
 * drain cost PostgreSQL 0.9–1.4 ms per delivery instead of 0.7–0.8 (measured with bench sends).
 */
const COVERED = [
  'contact_imports',
  'contacts',
  'events',
  'idempotency_records',
  'inbox_messages',
  'inbox_threads',
  'sender_identities',
  'suppression_changes',
  'suppressions',
  'users',
  'webhook_deliveries',
];

export class Migration20261125070000 extends Migration {

  override name = 'Migration20261125070000';

  override up(): void | Promise<void> {
    // One index insertion fewer per row on the send, webhook and inbound paths.
    for (const table of COVERED) this.addSql(`drop index if exists "${table}_org_id_index";`);
  }

  override down(): void | Promise<void> {
    for (const table of COVERED) this.addSql(`create index if not exists "${table}_org_id_index" on "${table}" ("org_id");`);
  }

}
