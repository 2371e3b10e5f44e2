import { fileURLToPath } from 'node:url';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import type { InferKyselyDB } from '@mikro-orm/sql';
import type { ColumnType } from 'kysely';
import { guardPool } from './pool-guard.ts';
import {
  ApiKey,
  ApiKeySchema,
  Automation,
  AutomationSchema,
  Broadcast,
  BroadcastSchema,
  Contact,
  ContactSchema,
  Domain,
  DomainSchema,
  EmailEvent,
  EmailEventCount,
  EmailEventCountSchema,
  EmailEventSchema,
  Event,
  EventSchema,
  IdempotencyRecord,
  IdempotencyRecordSchema,
  OrganizationSchema,
  CreditShardSchema,
  Segment,
  SegmentMember,
  SegmentMemberSchema,
  SegmentSchema,
  SenderIdentity,
  SenderIdentitySchema,
  Template,
  TemplateSchema,
  TemplateShare,
  TemplateShareSchema,
  User,
  UserSchema,
  WebhookAttempt,
  WebhookAttemptSchema,
  WebhookDelivery,
  WebhookDeliverySchema,
  WebhookEndpoint,
  WebhookEndpointSchema,
  AttachmentUpload,
  AttachmentUploadSchema,
  DomainDailySendSchema,
  EgressAddressDaySchema,
  EmailRecipient,
  EmailRecipientSchema,
  Suppression,
  SuppressionSchema,
  SuppressionChange,
  SuppressionChangeSchema,
  TransactionalEmail,
  TransactionalEmailSchema,
  TrackingHit,
  TrackingHitSchema,
  InboundMessageSchema,
  ActorLeaseSchema,
  EncryptionKeyCheckSchema,
  InboxAttachment,
  InboxAttachmentSchema,
  InboxMessage,
  InboxMessageSchema,
  InboxThread,
  InboxThreadSchema,
  ContactImport,
  ContactImportSchema,
  ContactImportError,
  ContactImportErrorSchema,
  ContactImportMember,
  ContactImportMemberSchema,
  DashboardSession,
  DashboardSessionSchema,
  DashboardInvite,
  DashboardInviteSchema,
  AutomationDefinition,
  AutomationDefinitionSchema,
  AutomationRun,
  AutomationRunSchema,
  AutomationRunStep,
  AutomationRunStepSchema,
  AutomationEnrolment,
  AutomationEnrolmentSchema,
  AutomationDateOccurrence,
  AutomationDateOccurrenceSchema,
  AutomationStatShard,
  AutomationStatShardSchema,
  ContactEvent,
  ContactEventSchema,
  DmarcAddress,
  DmarcAddressSchema,
  DmarcRecord,
  DmarcRecordSchema,
  DmarcReport,
  DmarcReportSchema,
  MessageStream,
  MessageStreamSchema,
  StreamDailySend,
  StreamDailySendSchema,
} from './entities/index.ts';

export const TENANT_FILTER = 'tenant';

/**
 * Every entity that carries `orgId`. The `tenant` filter is on by default for all of them and
 * needs an `orgId` argument: a query on a tenant table through an EntityManager that was not
 * scoped with `scopeToOrg` (or that did not turn the filter off explicitly, as operator
 * tooling does) throws instead of reading across workspaces.
 */
export const TENANT_ENTITIES = [
  User,
  ApiKey,
  Domain,
  SenderIdentity,
  Contact,
  Segment,
  SegmentMember,
  Automation,
  AutomationDefinition,
  AutomationRun,
  AutomationRunStep,
  AutomationEnrolment,
  AutomationDateOccurrence,
  AutomationStatShard,
  ContactEvent,
  Template,
  TemplateShare,
  Broadcast,
  IdempotencyRecord,
  Event,
  EmailEvent,
  EmailEventCount,
  WebhookEndpoint,
  WebhookDelivery,
  WebhookAttempt,
  TransactionalEmail,
  EmailRecipient,
  Suppression,
  SuppressionChange,
  MessageStream,
  StreamDailySend,
  AttachmentUpload,
  InboxThread,
  InboxMessage,
  InboxAttachment,
  ContactImport,
  ContactImportError,
  ContactImportMember,
  TrackingHit,
  DashboardSession,
  DashboardInvite,
  DmarcReport,
  DmarcRecord,
  DmarcAddress,
];

const ENTITY_SCHEMAS = [
  OrganizationSchema,
  CreditShardSchema,
  UserSchema,
  ApiKeySchema,
  DomainSchema,
  SenderIdentitySchema,
  ContactSchema,
  SegmentSchema,
  SegmentMemberSchema,
  AutomationSchema,
  AutomationDefinitionSchema,
  AutomationRunSchema,
  AutomationRunStepSchema,
  AutomationEnrolmentSchema,
  AutomationDateOccurrenceSchema,
  AutomationStatShardSchema,
  ContactEventSchema,
  TemplateSchema,
  TemplateShareSchema,
  BroadcastSchema,
  IdempotencyRecordSchema,
  EventSchema,
  EmailEventSchema,
  EmailEventCountSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  WebhookAttemptSchema,
  TransactionalEmailSchema,
  EmailRecipientSchema,
  SuppressionSchema,
  SuppressionChangeSchema,
  MessageStreamSchema,
  StreamDailySendSchema,
  DomainDailySendSchema,
  EgressAddressDaySchema,
  AttachmentUploadSchema,
  InboundMessageSchema,
  ActorLeaseSchema,
  EncryptionKeyCheckSchema,
  InboxThreadSchema,
  InboxMessageSchema,
  InboxAttachmentSchema,
  ContactImportSchema,
  ContactImportErrorSchema,
  ContactImportMemberSchema,
  TrackingHitSchema,
  DashboardSessionSchema,
  DashboardInviteSchema,
  DmarcReportSchema,
  DmarcRecordSchema,
  DmarcAddressSchema,
];

/**
 * Herald's tables and columns as Kysely sees them (db/workspace-db.ts), inferred from the
 * entities, except that a timestamp column reads as text: MikroORM's pg type parsers leave
 * dates unparsed (the ORM maps them), and Kysely queries run on its connections. Writes take a
 * Date or text.
 */
export type HeraldDb = { [Table in keyof InferredDb]: { [Column in keyof InferredDb[Table]]: DatesReadAsText<InferredDb[Table][Column]> } };
type InferredDb = InferKyselyDB<(typeof ENTITY_SCHEMAS)[number]>;
type DateAsText<T> = T extends Date ? string : T;
type DatesReadAsText<V> =
  V extends ColumnType<infer Read, infer Insert, infer Update>
    ? ColumnType<DateAsText<Read>, Insert, Update>
    : [Extract<V, Date>] extends [never]
      ? V
      : ColumnType<DateAsText<V>, V | string, V | string>;

/** Tables whose rows belong to one workspace (an `org_id` column): what raw SQL must scope (test/unit/sql-review.test.ts). */
export function tenantTableNames(): string[] {
  return ENTITY_SCHEMAS.filter((schema) => 'orgId' in schema.meta.properties).map(
    (schema) => schema.meta.tableName ?? schema.meta.collection,
  );
}

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));

export interface OrmOptions {
  databaseUrl: string;
  poolMax?: number;
  debug?: boolean;
}

export function createOrmConfig(options: OrmOptions) {
  return defineConfig({
    clientUrl: options.databaseUrl,
    entities: ENTITY_SCHEMAS,
    extensions: [Migrator],
    pool: { min: 0, max: options.poolMax ?? 10, idleTimeoutMillis: 30_000 },
    // A connection that cannot be made (or a pool slot not freed) within 5 s fails the statement,
    // which is answered as "database unavailable", instead of holding the request forever.
    // Connections cut by the server while checked out go back to the pool (db/pool-guard.ts).
    driverOptions: { connectionTimeoutMillis: 5_000, onPoolCreated: guardPool },
    debug: options.debug ?? false,
    forceUtcTimezone: true,
    // Plain SQL functions are the migrations' (the date keys an index is built on, migration
    // 20261128060100): the schema diff neither drops nor alters them.
    schemaGenerator: { ignoreRoutines: true },
    filters: {
      [TENANT_FILTER]: {
        name: TENANT_FILTER,
        entity: TENANT_ENTITIES,
        default: true,
        cond: (args: { orgId?: unknown }) => {
          if (typeof args.orgId !== 'string' || args.orgId.length === 0) {
            throw new Error('tenant filter needs an orgId');
          }
          return { orgId: args.orgId };
        },
      },
    },
    migrations: {
      path: MIGRATIONS_DIR,
      pathTs: MIGRATIONS_DIR,
      glob: '!(*.d).ts',
      emit: 'ts',
      snapshot: true,
      snapshotName: '.snapshot-herald',
      silent: true,
      transactional: true,
      allOrNothing: true,
    },
  });
}

export async function createOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(createOrmConfig(options));
}

/** A fork of `em` whose tenant filter is bound to one workspace. */
export function scopeToOrg(em: EntityManager, orgId: string): EntityManager {
  const scoped = em.fork();
  scoped.setFilterParams(TENANT_FILTER, { orgId });
  return scoped;
}

/** Operator access across workspaces (CLI, maintenance jobs): the tenant filter is off. */
export const ALL_TENANTS = { filters: { [TENANT_FILTER]: false } } as const;

export type { EntityManager, MikroORM };
