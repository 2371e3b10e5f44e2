import { Migration } from '@mikro-orm/migrations';

/**
 * A broadcast's message stream: `broadcast` (the built-in stream every broadcast used so far) or
 * a custom stream of the broadcast kind; copied to each message it queues.
 */
export class Migration20261128030000 extends Migration {

  override name = 'Migration20261128030000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "broadcasts" add "stream" varchar(64) not null default 'broadcast';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "broadcasts" drop column "stream";`);
  }
}
