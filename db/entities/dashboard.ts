import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

/** A person's signed-in browser session on the dashboard; the cookie holds the token, this row its SHA-256. */
export const DashboardSessionSchema = defineEntity({
  name: 'DashboardSession',
  tableName: 'dashboard_sessions',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    userId: p.string().length(24).index(),
    tokenHash: p.string().length(64).unique(),
    /** The synchronizer token every form of this session posts back. */
    csrfToken: p.string().length(64),
    createdAt: createdAtColumn(),
    lastSeenAt: p.datetime(),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
});

export class DashboardSession extends DashboardSessionSchema.class {}
DashboardSessionSchema.setClass(DashboardSession);

/**
 * A one-use link to the dashboard; the link holds the token, this row its SHA-256: an
 * invitation to join a workspace (`herald admin invite`, 7 days), or an operator's sign-in link
 * for an existing person (`herald admin sign-in-link`, 15 minutes; the dev stack prints one).
 */
export const DashboardInviteSchema = defineEntity({
  name: 'DashboardInvite',
  tableName: 'dashboard_invites',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    email: p.string().length(320),
    role: p.string().length(16).$type<UserRole>(),
    kind: p.string().length(16).$type<'invite' | 'sign_in'>().default('invite'),
    tokenHash: p.string().length(64).unique(),
    createdAt: createdAtColumn(),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
  },
});

export class DashboardInvite extends DashboardInviteSchema.class {}
DashboardInviteSchema.setClass(DashboardInvite);

/** What a person may do on the dashboard: an owner also manages people and live keys. */
export type UserRole = 'owner' | 'member';
