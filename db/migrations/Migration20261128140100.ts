import { Migration } from '@mikro-orm/migrations';

/**
 * The date trigger's index, cheaper to write: only custom fields' dates are keyed
 * (`custom.<name>|YYYY-MM-DD` and `custom.<name>|MM-DD` for every custom field whose value is a
 * string starting with a `YYYY-MM-DD` date), and only contacts that have one are in the index.
 * Whether a contact has one is `herald_contact_has_date_field`, a jsonpath test PostgreSQL
 * inlines (no SQL function call per row): a contact without a date field (most of an import)
 * costs its insert that test only, not the key function (which is not inlined: its sub-select).
 * Triggers on `created_at` read the plain `(org_id, created_at, id)` index by day ranges instead.
 */
export class Migration20261128140100 extends Migration {

  override name = 'Migration20261128140100';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_date_keys_index";`);
    this.addSql(`drop function if exists herald_contact_date_keys(jsonb, timestamptz);`);
    this.addSql(`create or replace function herald_contact_custom_date_keys(fields jsonb) returns text[]
      language sql immutable parallel safe as $$
        select array(select 'custom.' || f.key || '|' || k.key
                       from jsonb_each(case when jsonb_typeof(fields) = 'object' then fields else '{}'::jsonb end) f
                       cross join lateral (values (substr(f.value #>> '{}', 1, 10)), (substr(f.value #>> '{}', 6, 5))) k(key)
                      where jsonb_typeof(f.value) = 'string'
                        and (f.value #>> '{}') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}($|[T ])')
      $$;`);
    this.addSql(`create or replace function herald_contact_has_date_field(fields jsonb) returns boolean
      language sql immutable parallel safe as $$
        select jsonb_path_exists(fields, '$.* ? (@.type() == "string" && @ like_regex "^[0-9]{4}-[0-9]{2}-[0-9]{2}($|[T ])")')
      $$;`);
    this.addSql(
      `create index "contacts_date_keys_index" on "contacts" using gin (herald_contact_custom_date_keys("custom_fields")) where herald_contact_has_date_field("custom_fields");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_date_keys_index";`);
    this.addSql(`drop function if exists herald_contact_custom_date_keys(jsonb);`);
    this.addSql(`drop function if exists herald_contact_has_date_field(jsonb);`);
    this.addSql(`create or replace function herald_contact_date_keys(fields jsonb, created timestamptz) returns text[]
      language sql immutable parallel safe as $$
        select array['created_at|' || to_char(created at time zone 'UTC', 'YYYY-MM-DD'),
                     'created_at|' || to_char(created at time zone 'UTC', 'MM-DD')]
            || array(select 'custom.' || f.key || '|' || k.key
                       from jsonb_each(case when jsonb_typeof(fields) = 'object' then fields else '{}'::jsonb end) f
                       cross join lateral (values (substr(f.value #>> '{}', 1, 10)), (substr(f.value #>> '{}', 6, 5))) k(key)
                      where jsonb_typeof(f.value) = 'string'
                        and (f.value #>> '{}') ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}($|[T ])')
      $$;`);
    this.addSql(`create index "contacts_date_keys_index" on "contacts" using gin (herald_contact_date_keys("custom_fields", "created_at"));`);
  }

}
