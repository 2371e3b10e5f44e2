import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/stack.ts';

describe('migrations', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(() => stack.close());

  it('leave nothing pending and match the entities exactly', async () => {
    expect(await stack.orm.migrator.getPending()).toEqual([]);
    const diff = await stack.orm.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim()).toBe('');
  });

  it('create every table of the data model with ids of 24 characters', async () => {
    const rows = await stack.orm.em.getConnection().execute<{ table_name: string; character_maximum_length: number | null }[]>(
      `select t.table_name, c.character_maximum_length
         from information_schema.tables t
         left join information_schema.columns c
           on c.table_schema = t.table_schema and c.table_name = t.table_name and c.column_name = 'id'
        where t.table_schema = 'public' and t.table_type = 'BASE TABLE' and t.table_name <> 'mikro_orm_migrations'
        order by t.table_name`,
    );
    expect(rows.map((r) => r.table_name)).toEqual([
      'actor_leases',
      'api_keys',
      'attachment_uploads',
      'automation_date_occurrences',
      'automation_definitions',
      'automation_enrolments',
      'automation_run_steps',
      'automation_runs',
      'automation_stat_shards',
      'automations',
      'broadcasts',
      'contact_events',
      'contact_import_errors',
      'contact_import_members',
      'contact_imports',
      'contacts',
      'credit_shards',
      'dashboard_invites',
      'dashboard_sessions',
      'dmarc_addresses',
      'dmarc_records',
      'dmarc_reports',
      'domain_daily_sends',
      'domains',
      'egress_address_days',
      'email_event_counts',
      'email_events',
      'email_recipients',
      'encryption_key_checks',
      'events',
      'idempotency_records',
      'inbound_messages',
      'inbox_attachments',
      'inbox_messages',
      'inbox_threads',
      'message_streams',
      'organizations',
      'segment_members',
      'segments',
      'sender_identities',
      'stream_daily_sends',
      'suppression_changes',
      'suppressions',
      'template_shares',
      'templates',
      'tracking_hits',
      'transactional_emails',
      'users',
      'webhook_attempts',
      'webhook_deliveries',
      'webhook_endpoints',
    ]);
    // The rollups email_event_counts and domain_daily_sends are keyed by their columns and have no
    // id; actor_leases is keyed by the actor's name; segment_members by (segment, contact);
    // contact_import_errors by (import, row); contact_import_members by (contact, import); credit_shards by (workspace, shard); automation_enrolments by
    // (automation, contact); automation_stat_shards by (automation, shard); automation_date_occurrences by (automation, contact, day);
    // encryption_key_checks by its name; dmarc_addresses by its domain; egress_address_days by (address, day).
    expect(rows.filter((r) => r.character_maximum_length === null).map((r) => r.table_name)).toEqual([
      'actor_leases',
      'automation_date_occurrences',
      'automation_enrolments',
      'automation_stat_shards',
      'contact_import_errors',
      'contact_import_members',
      'credit_shards',
      'dmarc_addresses',
      'domain_daily_sends',
      'egress_address_days',
      'email_event_counts',
      'encryption_key_checks',
      'segment_members',
      'stream_daily_sends',
    ]);
    expect(new Set(rows.flatMap((r) => (r.character_maximum_length === null ? [] : [r.character_maximum_length])))).toEqual(new Set([24]));
  });

  it('index contact tags with GIN', async () => {
    const rows = await stack.orm.em
      .getConnection()
      .execute<{ indexdef: string }[]>(`select indexdef from pg_indexes where tablename = 'contacts' and indexdef ilike '%gin%'`);
    expect(rows.map((r) => r.indexdef).join()).toMatch(/USING gin \(tags\)/);
  });
});
