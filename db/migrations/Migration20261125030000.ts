import { Migration } from '@mikro-orm/migrations';

export class Migration20261125030000 extends Migration {

  override name = 'Migration20261125030000';

  override up(): void | Promise<void> {
    // Thread and message state (inbox.threads:write): read, starred, archived, tags.
    this.addSql(`alter table "inbox_messages" add "read_at" timestamptz null, add "starred" boolean not null default false, add "tags" text[] not null default '{}';`);
    // What the workspace sent is read; what it received before this is unread.
    this.addSql(`update "inbox_messages" set "read_at" = "created_at" where "direction" = 'outbound';`);
    this.addSql(`create index "inbox_messages_thread_id_index" on "inbox_messages" ("thread_id") where "read_at" is null;`);
    this.addSql(`alter table "inbox_threads" add "starred" boolean not null default false, add "archived" boolean not null default false, add "tags" text[] not null default '{}';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "inbox_messages_thread_id_index";`);
    this.addSql(`alter table "inbox_messages" drop column "read_at", drop column "starred", drop column "tags";`);
    this.addSql(`alter table "inbox_threads" drop column "starred", drop column "archived", drop column "tags";`);
  }

}
