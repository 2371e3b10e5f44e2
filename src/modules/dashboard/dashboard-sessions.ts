import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type EntityManager, LockMode, type MikroORM } from '@mikro-orm/postgresql';
import { DashboardInvite, DashboardSession, Organization, User } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import type { UserRole } from '../../../db/entities/index.ts';

/**
 * The records behind dashboard sign-in: server-side sessions (the cookie's token stored as its
 * SHA-256, with a per-session CSRF token) and one-use links (invitations, operators' sign-in
 * links), also stored as hashes. dashboard-auth.service.ts builds people's actions on them.
 */

/** A session lasts 12 hours from its last use, and 7 days at most from sign-in. */
export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_MAX_MS = 7 * 86_400_000;
/** last_seen_at is written at most once a minute per session (a page load is a read, not a write). */
const SEEN_WRITE_MS = 60_000;

/** A person signed in: their session, workspace and role. */
export interface SignedIn {
  sessionId: string;
  csrfToken: string;
  userId: string;
  orgId: string;
  orgName: string;
  email: string;
  name: string;
  role: UserRole;
  /** The Temporal UI listing this workspace's workflows, when Herald knows the UI's address. */
  workflowsUrl?: string;
}

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');
export const newToken = () => randomBytes(32).toString('base64url');

/** Whether two tokens are equal, in time independent of where they differ. */
export function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Whether a link can still be used: it exists, was not used, and has not expired. */
export const isOpen = (link: DashboardInvite | null, now: Date): link is DashboardInvite =>
  link !== null && !link.acceptedAt && link.expiresAt > now;

function describe(session: DashboardSession, user: User, org: Organization): SignedIn {
  return {
    sessionId: session.id,
    csrfToken: session.csrfToken,
    userId: user.id,
    orgId: user.orgId,
    orgName: org.name,
    email: user.email,
    name: user.name,
    role: user.role,
  };
}

/** One-use links: made with a fresh token (returned once), used up under a row lock, closed per address. */
export function createLinkRecords(orm: MikroORM) {
  return {
    /** A new one-use link for a person of a workspace: the token (for the URL) is returned this once, the row keeps its hash. */
    async create(
      em: EntityManager,
      link: Pick<DashboardInvite, 'orgId' | 'email' | 'role' | 'kind'>,
      ttlMs: number,
      now: Date,
    ): Promise<{ token: string; link: DashboardInvite }> {
      const token = newToken();
      const row = em.create(DashboardInvite, {
        ...link,
        tokenHash: tokenHash(token),
        expiresAt: new Date(now.getTime() + ttlMs),
        acceptedAt: null,
      });
      await em.flush();
      return { token, link: row };
    },

    /** The open link of `kind` a token names, locked in `em`'s transaction and used up now; null when unknown, used or expired. */
    async use(em: EntityManager, token: string, kind: DashboardInvite['kind'], now: Date): Promise<DashboardInvite | null> {
      const link = await em.findOne(
        DashboardInvite,
        { tokenHash: tokenHash(token), kind },
        { ...ALL_TENANTS, lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!isOpen(link, now)) return null;
      link.acceptedAt = now;
      return link;
    },

    /** The open link a token names, without using it; null when unknown, used or expired. */
    async find(token: string, kind: DashboardInvite['kind'], now: Date): Promise<DashboardInvite | null> {
      const link = await orm.em.fork().findOne(DashboardInvite, { tokenHash: tokenHash(token), kind }, ALL_TENANTS);
      return isOpen(link, now) ? link : null;
    },

    /** Closes the open links (invitations and sign-in links) of a workspace's address: they stop working now; the rows stay. */
    async close(
      em: EntityManager,
      orgId: string,
      email: string,
      now: Date,
      kinds: DashboardInvite['kind'][] = ['invite', 'sign_in'],
    ): Promise<void> {
      await em.nativeUpdate(
        DashboardInvite,
        { orgId, email, kind: { $in: kinds }, acceptedAt: null, expiresAt: { $gt: now } },
        { expiresAt: now },
        ALL_TENANTS,
      );
    },
  };
}

/** Sessions: opened for a person, resolved from a cookie token, ended one by one, per person or everywhere. */
export function createSessionRecords(orm: MikroORM) {
  return {
    async open(user: User, now: Date): Promise<{ token: string; session: SignedIn }> {
      const em = orm.em.fork();
      const token = newToken();
      const org = await em.findOneOrFail(Organization, { id: user.orgId });
      const session = em.create(DashboardSession, {
        orgId: user.orgId,
        userId: user.id,
        tokenHash: tokenHash(token),
        csrfToken: newToken(),
        lastSeenAt: now,
        expiresAt: new Date(now.getTime() + SESSION_MAX_MS),
        revokedAt: null,
      });
      await em.flush();
      return { token, session: describe(session, user, org) };
    },

    /** The live session a cookie token names, or null; refreshes its last use at most once a minute. */
    resolve: async (token: string, now = new Date()): Promise<SignedIn | null> => {
      const em = orm.em.fork();
      const session = await em.findOne(DashboardSession, { tokenHash: tokenHash(token) }, ALL_TENANTS);
      if (!session || session.revokedAt || session.expiresAt <= now || now.getTime() - session.lastSeenAt.getTime() > SESSION_IDLE_MS)
        return null;
      const user = await em.findOne(User, { id: session.userId }, ALL_TENANTS);
      const org = user && (await em.findOne(Organization, { id: user.orgId }));
      // Removing a person's access ends their sessions (revokeAccess); a person without a password
      // (the workspace's first owner, signed in by an operator's link) keeps the session the link opened.
      if (!user || !org) return null;
      if (now.getTime() - session.lastSeenAt.getTime() > SEEN_WRITE_MS) {
        session.lastSeenAt = now;
        await em.flush();
      }
      return describe(session, user, org);
    },

    /** Ends every session of a person. */
    endAll(em: EntityManager, user: User, now: Date): Promise<number> {
      return em.nativeUpdate(DashboardSession, { orgId: user.orgId, userId: user.id, revokedAt: null }, { revokedAt: now }, ALL_TENANTS);
    },

    /** Ends one session. */
    signOut: async (sessionId: string, now = new Date()): Promise<void> => {
      await orm.em.fork().nativeUpdate(DashboardSession, { id: sessionId, revokedAt: null }, { revokedAt: now }, ALL_TENANTS);
    },

    /** Ends every session of the person (every browser, this one included). */
    signOutEverywhere: (signedIn: SignedIn, now = new Date()): Promise<number> =>
      scopeToOrg(orm.em, signedIn.orgId).nativeUpdate(DashboardSession, { userId: signedIn.userId, revokedAt: null }, { revokedAt: now }),
  };
}

export type LinkRecords = ReturnType<typeof createLinkRecords>;
export type SessionRecords = ReturnType<typeof createSessionRecords>;
