import { Migration } from '@mikro-orm/migrations';

/** Tables whose composite indexes start with org_id: their single-column org_id index is redundant. */
const COVERED = [
  'contact_imports',
  'contacts',
  'email_recipients',
  'events',
  'idempotency_records',
  'inbox_messages',
  'inbox_threads',
  'sender_identities',
  'suppression_changes',
  'suppressions',
  'transactional_emails',
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
