import { Migration } from '@mikro-orm/migrations';

export class Migration20261124150057 extends Migration {

  override name = 'Migration20261124150057';

  override up(): void | Promise<void> {
    this.addSql(`alter table "domains" add "drain_lease_until" timestamptz null;`);

    this.addSql(`drop index "transactional_emails_open_index";`);
    this.addSql(`alter table "transactional_emails" add "next_attempt_at" timestamptz null, add "first_attempt_at" timestamptz null;`);
    this.addSql(`create index "transactional_emails_due_index" on "transactional_emails" ("domain_id", "next_attempt_at", "id") where "status" in ('scheduled', 'queued', 'sending');`);
    // Emails of the per-email workflows become queue rows of their domain's actor: due at their
    // scheduled time, or now (an email waiting for a retry is tried once more at once, its
    // deferred recipients only; the retry window counts from its creation).
    this.addSql(`update "transactional_emails" set "next_attempt_at" = coalesce("scheduled_at", now()), "first_attempt_at" = case when "status" = 'sending' then "created_at" end where "status" in ('scheduled', 'queued', 'sending');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "domains" drop column "drain_lease_until";`);

    this.addSql(`drop index "transactional_emails_due_index";`);
    this.addSql(`alter table "transactional_emails" drop column "next_attempt_at", drop column "first_attempt_at";`);
    this.addSql(`create index "transactional_emails_open_index" on "transactional_emails" ("updated_at") where status = ANY (ARRAY['scheduled'::text, 'queued'::text, 'sending'::text]);`);
  }

}
