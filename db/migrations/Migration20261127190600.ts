import { Migration } from '@mikro-orm/migrations';

/**
 * Tracking domains and switchable tracking: a domain's custom tracking host (verified by its
 * CNAME, one workspace holds a verified host), each email's own open and click switches (every
 * kind of email, broadcast messages copied from their broadcast), a broadcast's two switches in
 * place of its one, and hits of emails that belong to no broadcast.
 */
export class Migration20261127190600 extends Migration {

  override name = 'Migration20261127190600';

  override up(): void | Promise<void> {
    this.addSql(`alter table "domains" add "tracking_host" varchar(253) null, add "tracking_verified_at" timestamptz null, add "tracking_checked_at" timestamptz null, add "tracking_found" varchar(253) null;`);
    this.addSql(`create unique index "domains_tracking_host_verified_unique" on "domains" ("tracking_host") where "tracking_verified_at" is not null;`);
    this.addSql(`alter table "transactional_emails" add "track_opens" boolean not null default false, add "track_clicks" boolean not null default false;`);
    this.addSql(`alter table "broadcasts" add "track_opens" boolean not null default true, add "track_clicks" boolean not null default true;`);
    this.addSql(`update "broadcasts" set "track_opens" = "tracking", "track_clicks" = "tracking" where not "tracking";`);
    this.addSql(`update "transactional_emails" e set "track_opens" = b."tracking", "track_clicks" = b."tracking" from "broadcasts" b where e."broadcast_id" = b."id" and e."org_id" = b."org_id" and b."tracking";`);
    this.addSql(`alter table "broadcasts" drop column "tracking";`);
    this.addSql(`alter table "tracking_hits" alter column "broadcast_id" drop not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "tracking_hits" where "broadcast_id" is null;`);
    this.addSql(`alter table "tracking_hits" alter column "broadcast_id" set not null;`);
    this.addSql(`alter table "broadcasts" add "tracking" boolean not null default true;`);
    this.addSql(`update "broadcasts" set "tracking" = "track_opens" or "track_clicks";`);
    this.addSql(`alter table "broadcasts" drop column "track_opens", drop column "track_clicks";`);
    this.addSql(`alter table "transactional_emails" drop column "track_opens", drop column "track_clicks";`);
    this.addSql(`drop index if exists "domains_tracking_host_verified_unique";`);
    this.addSql(`alter table "domains" drop column "tracking_host", drop column "tracking_verified_at", drop column "tracking_checked_at", drop column "tracking_found";`);
  }

}
