import { Migration } from '@mikro-orm/migrations';

export class Migration20261124222900 extends Migration {

  override name = 'Migration20261124222900';

  override up(): void | Promise<void> {
    // A send rendered from a stored template records which one, at which version.
    this.addSql(`alter table "transactional_emails" add "template_id" varchar(24) null, add "template_version" int null;`);
    // Tags on a send, and what GET /outbox/emails filters on: tags, and one email's events.
    this.addSql(`alter table "transactional_emails" add "tags" text[] not null default '{}';`);
    this.addSql(`create index "transactional_emails_tags_index" on "transactional_emails" using gin ("tags");`);
    this.addSql(`create index "email_events_org_id_email_id_index" on "email_events" ("org_id", "email_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "email_events_org_id_email_id_index";`);
    this.addSql(`drop index "transactional_emails_tags_index";`);
    this.addSql(`alter table "transactional_emails" drop column "template_id", drop column "template_version", drop column "tags";`);
  }

}
