import { Migration } from '@mikro-orm/migrations';

/**
 * The date trigger's index: each contact's date keys, `created_at|YYYY-MM-DD` and
 * `created_at|MM-DD` (its UTC day) and the same two for every custom field whose value is a
 * string starting with a `YYYY-MM-DD` date (`custom.<name>|…`), in a GIN index, so the scan
 * reads only the contacts whose date (or month-day, for yearly triggers) falls in the days it
 * scans, whatever the field, instead of every contact of the workspace.
 */
export class Migration20261128060100 extends Migration {

  override name = 'Migration20261128060100';

  override up(): void | Promise<void> {
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

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "contacts_date_keys_index";`);
    this.addSql(`drop function if exists herald_contact_date_keys(jsonb, timestamptz);`);
  }

}
