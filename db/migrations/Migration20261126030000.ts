import { Migration } from '@mikro-orm/migrations';

/**
 * The dashboard's people: a password hash and a role per user (the first user of each existing
 * workspace, the one `herald admin org create` made, becomes its owner), browser sessions and
 * invitations (each stored as the SHA-256 of the token its cookie or link holds).
 */
export class Migration20261126030000 extends Migration {

  override name = 'Migration20261126030000';

  override up(): void | Promise<void> {
    this.addSql(`create table "dashboard_invites" ("id" varchar(24) not null, "org_id" varchar(24) not null, "email" varchar(320) not null, "role" varchar(16) not null, "token_hash" varchar(64) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "dashboard_invites_org_id_index" on "dashboard_invites" ("org_id");`);
    this.addSql(`alter table "dashboard_invites" add constraint "dashboard_invites_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "dashboard_sessions" ("id" varchar(24) not null, "org_id" varchar(24) not null, "user_id" varchar(24) not null, "token_hash" varchar(64) not null, "csrf_token" varchar(64) not null, "created_at" timestamptz not null, "last_seen_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "dashboard_sessions_user_id_index" on "dashboard_sessions" ("user_id");`);
    this.addSql(`alter table "dashboard_sessions" add constraint "dashboard_sessions_token_hash_unique" unique ("token_hash");`);

    this.addSql(`alter table "users" add "password_hash" varchar(200) null, add "role" varchar(16) not null default 'member';`);
    this.addSql(`update "users" set "role" = 'owner' where "id" in (select min("id") from "users" group by "org_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "dashboard_invites" cascade;`);
    this.addSql(`drop table if exists "dashboard_sessions" cascade;`);

    this.addSql(`alter table "users" drop column "password_hash", drop column "role";`);
  }

}
