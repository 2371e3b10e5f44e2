import { Migration } from '@mikro-orm/migrations';

/**
 * Due waits first: the open runs of an automation that are in a wait (`context.wait` set: a
 * wait, a wait-until or a wait-for-event step), by due time, so a drain claims the waits that
 * have fallen due before runs that are still to be parked at their first wait (a burst of
 * enrolments, an automation resumed after a pause), and a wait ends on time behind any backlog.
 */
export class Migration20261129040000 extends Migration {

  override name = 'Migration20261129040000';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "automation_runs_wait_due_index" on "automation_runs" ("automation_id", "due_at") where "status" = 'active' and ("context" -> 'wait') is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "automation_runs_wait_due_index";`);
  }

}
