import { Migration } from '@mikro-orm/migrations';

/**
 * Fewer index entries per send. The emails' index on org_id alone gave way to one on
 * (org_id, domain_id) over open mail only (scheduled, queued, sending), which serves its two
 * readers (removing a domain counts its open mail; the attachment cleanup looks for open mail
 * of the workspace): a send is written into it at acceptance and its claim, no longer at its
 * settlement, and the index no longer grows with the workspace's history. The tag index holds
 * tagged emails only (the log's tag filter adds `cardinality(tags) <> 0`, which a tag implies):
 * GIN wrote an entry for an empty array at each row version. The inbox messages'
 * unique indexes on inbound_id and email_id hold only rows that have the key (a sent message
 * has no inbound_id, a received one no email_id): one entry fewer per message; uniqueness is
 * unchanged (nulls never collided) and lookups by either key imply it is not null.
 */
export class Migration20261202040000 extends Migration {

  override name = 'Migration20261202040000';

  override up(): void | Promise<void> {
    this.addSql(`create index "transactional_emails_open_index" on "transactional_emails" ("org_id", "domain_id") where "status" in ('scheduled', 'queued', 'sending');`);
    this.addSql(`drop index "transactional_emails_org_id_index";`);
    this.addSql(`drop index "transactional_emails_tags_index";`);
    this.addSql(`create index "transactional_emails_tags_index" on "transactional_emails" using gin ("tags") where cardinality("tags") <> 0;`);
    this.addSql(`create unique index "inbox_messages_inbound_id_org_id_unique_partial" on "inbox_messages" ("inbound_id", "org_id") where "inbound_id" is not null;`);
    this.addSql(`alter table "inbox_messages" drop constraint "inbox_messages_inbound_id_org_id_unique";`);
    this.addSql(`alter index "inbox_messages_inbound_id_org_id_unique_partial" rename to "inbox_messages_inbound_id_org_id_unique";`);
    this.addSql(`create unique index "inbox_messages_email_id_unique_partial" on "inbox_messages" ("email_id") where "email_id" is not null;`);
    this.addSql(`alter table "inbox_messages" drop constraint "inbox_messages_email_id_unique";`);
    this.addSql(`alter index "inbox_messages_email_id_unique_partial" rename to "inbox_messages_email_id_unique";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "inbox_messages_email_id_unique";`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_email_id_unique" unique ("email_id");`);
    this.addSql(`drop index "inbox_messages_inbound_id_org_id_unique";`);
    this.addSql(`alter table "inbox_messages" add constraint "inbox_messages_inbound_id_org_id_unique" unique ("inbound_id", "org_id");`);
    this.addSql(`drop index "transactional_emails_tags_index";`);
    this.addSql(`create index "transactional_emails_tags_index" on "transactional_emails" using gin ("tags");`);
    this.addSql(`create index "transactional_emails_org_id_index" on "transactional_emails" ("org_id");`);
    this.addSql(`drop index "transactional_emails_open_index";`);
  }

}
