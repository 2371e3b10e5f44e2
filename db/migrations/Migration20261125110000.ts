import { Migration } from '@mikro-orm/migrations';

/**
 * Broadcasts that send: a broadcast's send state (domain, launch and send times, the audience
 * checkpoint, messages queued, completion, cancel, failure), the workspace's postal address for
 * broadcast footers, and broadcast messages as rows of the domain queue (`broadcast_id`,
 * `contact_id`, unique per broadcast and contact) with a due index of their own; the email log's
 * index and the transactional due index leave broadcast messages out.
 */
export class Migration20261125110000 extends Migration {

  override name = 'Migration20261125110000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "broadcasts" add "domain_id" varchar(24) null, add "launched_at" timestamptz null, add "sending_at" timestamptz null, add "audience_after_at" timestamptz null, add "audience_after_id" varchar(24) null, add "audience_written_at" timestamptz null, add "recipient_count" int not null default 0, add "completed_at" timestamptz null, add "cancelled_at" timestamptz null, add "failure_reason" varchar(1024) null;`);

    this.addSql(`alter table "organizations" add "postal_address" varchar(500) null;`);

    this.addSql(`alter table "transactional_emails" add "broadcast_id" varchar(24) null, add "contact_id" varchar(24) null;`);
    this.addSql(`drop index "transactional_emails_org_id_created_at_index";`);
    this.addSql(`create index "transactional_emails_log_index" on "transactional_emails" ("org_id", "created_at", "id") where "broadcast_id" is null;`);
    this.addSql(`drop index "transactional_emails_due_index";`);
    this.addSql(`create index "transactional_emails_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending') and "broadcast_id" is null;`);
    this.addSql(`create index "transactional_emails_broadcast_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending') and "broadcast_id" is not null;`);
    this.addSql(`create unique index "transactional_emails_broadcast_contact_unique" on "transactional_emails" ("broadcast_id", "contact_id") where "broadcast_id" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "email_recipients" r using "transactional_emails" e where r."email_id" = e."id" and e."broadcast_id" is not null;`);
    this.addSql(`delete from "transactional_emails" where "broadcast_id" is not null;`);
    this.addSql(`drop index "transactional_emails_broadcast_contact_unique";`);
    this.addSql(`drop index "transactional_emails_broadcast_due_index";`);
    this.addSql(`drop index "transactional_emails_due_index";`);
    this.addSql(`create index "transactional_emails_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending');`);
    this.addSql(`drop index "transactional_emails_log_index";`);
    this.addSql(`create index "transactional_emails_org_id_created_at_index" on "transactional_emails" ("org_id", "created_at");`);
    this.addSql(`alter table "transactional_emails" drop column "broadcast_id", drop column "contact_id";`);

    this.addSql(`alter table "organizations" drop column "postal_address";`);

    this.addSql(`update "broadcasts" set "status" = 'draft' where "status" <> 'draft';`);
    this.addSql(`alter table "broadcasts" drop column "domain_id", drop column "launched_at", drop column "sending_at", drop column "audience_after_at", drop column "audience_after_id", drop column "audience_written_at", drop column "recipient_count", drop column "completed_at", drop column "cancelled_at", drop column "failure_reason";`);
  }

}
