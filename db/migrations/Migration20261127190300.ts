import { Migration } from '@mikro-orm/migrations';

/**
 * Automatic warm-up of sending domains (the plan's step, the cap it allows today, the last
 * evaluation) and the per-workspace reputation policy (plan and policy overrides, the pause).
 * Domains that exist already keep sending as before (warm-up off); new ones start a plan.
 */
export class Migration20261127190300 extends Migration {

  override name = 'Migration20261127190300';

  override up(): void | Promise<void> {
    this.addSql(`alter table "domains" add column "warmup_mode" text not null default 'off', add column "warmup_step" int not null default 0, add column "warmup_cap" int null, add column "warmup_plan" jsonb null, add column "warmup_evaluated_on" date null, add column "warmup_last" jsonb null;`);
    this.addSql(`alter table "domains" add constraint "domains_warmup_mode_check" check ("warmup_mode" in ('off', 'new', 'existing', 'done'));`);
    this.addSql(`alter table "organizations" add column "warmup_plan" jsonb null, add column "reputation_policy" jsonb null, add column "reputation_paused_at" timestamptz null, add column "reputation_pause" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "organizations" drop column "warmup_plan", drop column "reputation_policy", drop column "reputation_paused_at", drop column "reputation_pause";`);
    this.addSql(`alter table "domains" drop constraint "domains_warmup_mode_check";`);
    this.addSql(`alter table "domains" drop column "warmup_mode", drop column "warmup_step", drop column "warmup_cap", drop column "warmup_plan", drop column "warmup_evaluated_on", drop column "warmup_last";`);
  }

}
