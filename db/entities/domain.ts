import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const DOMAIN_STATUSES = ['pending', 'verified', 'attention'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];
export const DOMAIN_REPUTATION_STATES = ['healthy', 'recovery'] as const;
export type DomainReputationState = (typeof DOMAIN_REPUTATION_STATES)[number];
/** Automatic warm-up: off, following the plan's schedule for a new or an existing domain, or done (full volume). */
export const DOMAIN_WARMUP_MODES = ['off', 'new', 'existing', 'done'] as const;
export type DomainWarmupMode = (typeof DOMAIN_WARMUP_MODES)[number];
export const DOMAIN_SOURCES = ['operator', 'dev'] as const;

/**
 * A sending (and receiving) domain. Several workspaces may add the same name (adding one never
 * tells a workspace what another holds), but only one holds it proven (verified or attention,
 * a partial unique index), so inbound mail routes unambiguously and a pending domain receives
 * nothing. The DKIM private key is stored encrypted
 * (`enc:v1:` AES-256-GCM envelope, see src/crypto).
 */
export const DomainSchema = defineEntity({
  name: 'Domain',
  tableName: 'domains',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    domain: p.string().length(253),
    status: p.enum(DOMAIN_STATUSES).default('pending'),
    isDefault: p.boolean().default(false),
    source: p.enum(DOMAIN_SOURCES).default('operator'),
    dkimSelector: p.string().length(63).default('herald'),
    dkimPublicKey: p.text(),
    dkimPrivateKeyEncrypted: p.text(),
    /** Warm-up cap: messages per UTC day; null means no cap. */
    dailyCap: p.integer().nullable(),
    reputationState: p.enum(DOMAIN_REPUTATION_STATES).default('healthy'),
    /** Automatic warm-up (src/modules/warmup): which schedule, the step of today, and the cap that step allows (null: none). */
    warmupMode: p.enum(DOMAIN_WARMUP_MODES).default('off'),
    warmupStep: p.integer().default(0),
    warmupCap: p.integer().nullable(),
    /** This domain's own plan (overrides the workspace's and the default), as WarmupPlanInput. */
    warmupPlan: p.json<Record<string, unknown>>().nullable(),
    /** The UTC day the step was last evaluated (once per day), and what that evaluation found. */
    warmupEvaluatedOn: p.date().nullable(),
    warmupLast: p.json<Record<string, unknown>>().nullable(),
    /** The egress IP pool its mail leaves from (a name in EGRESS_POOLS); null: the default pool or route. */
    ipPool: p.string().length(63).nullable(),
    verifiedAt: p.datetime().nullable(),
    /** What the last DNS check found, per record (spf, dkim, dmarc, return_path). */
    dnsCheck: p.json<Record<string, unknown>>().defaultRaw(`'{}'`),
    lastCheckedAt: p.datetime().nullable(),
    /** The custom host of its open pixels and tracked links (a CNAME to Herald's tracking host), null for none. */
    trackingHost: p.string().length(253).nullable(),
    /** When the host's CNAME was last found right; null while it is not (links then use PUBLIC_URL). */
    trackingVerifiedAt: p.datetime().nullable(),
    trackingCheckedAt: p.datetime().nullable(),
    /** What the last check found at the host (its CNAME target), for the page that shows it. */
    trackingFound: p.string().length(253).nullable(),
    /**
     * Until when the domain's send actor (`send-domain:<id>`) is draining: while it is in the
     * future the actor sees new emails by itself, so the API does not signal it.
     */
    drainLeaseUntil: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  uniques: [
    { name: 'domains_org_id_domain_unique', properties: ['orgId', 'domain'] },
    { name: 'domains_domain_proven_unique', properties: ['domain'], where: { status: { $ne: 'pending' } } },
    { name: 'domains_tracking_host_verified_unique', properties: ['trackingHost'], where: { trackingVerifiedAt: { $ne: null } } },
  ],
});

export class Domain extends DomainSchema.class {}
DomainSchema.setClass(Domain);

/** A from-address a workspace may send as, on one of its domains. */
export const SenderIdentitySchema = defineEntity({
  name: 'SenderIdentity',
  tableName: 'sender_identities',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    domainId: p.string().length(24).index(),
    email: p.string().length(320),
    name: p.string().length(200),
    isDefault: p.boolean().default(false),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'email'] }],
});

export class SenderIdentity extends SenderIdentitySchema.class {}
SenderIdentitySchema.setClass(SenderIdentity);
