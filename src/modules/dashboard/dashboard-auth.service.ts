import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type EntityManager, LockMode, type MikroORM } from '@mikro-orm/postgresql';
import { hash, verify } from '@node-rs/argon2';
import { DashboardInvite, DashboardSession, Organization, User, type UserRole } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';

/** A session lasts 12 hours from its last use, and 7 days at most from sign-in. */
export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_MAX_MS = 7 * 86_400_000;
/** last_seen_at is written at most once a minute per session (a page load is a read, not a write). */
const SEEN_WRITE_MS = 60_000;
/** An invitation link works for 7 days, once; an operator's sign-in link 15 minutes, once. */
export const INVITE_TTL_MS = 7 * 86_400_000;
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;
/** Passwords: 12 characters at least (NIST 800-63B's length-over-composition advice), 200 at most. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

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
const newToken = () => randomBytes(32).toString('base64url');

/** Whether two tokens are equal, in time independent of where they differ. */
export function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Whether a link can still be used: it exists, was not used, and has not expired. */
const isOpen = (link: DashboardInvite | null, now: Date): link is DashboardInvite =>
  link !== null && !link.acceptedAt && link.expiresAt > now;

/** A hash to verify against when no user matches, so an unknown email costs the same time as a wrong password. */
let decoyHash: Promise<string> | null = null;

/**
 * People on the dashboard: invitations (created by operators, `herald admin invite`), password
 * sign-in (argon2id), and server-side sessions whose cookie token is stored as its SHA-256, with
 * a per-session CSRF token. Sessions end on sign-out, after 12 idle hours or 7 days, or all at
 * once ("sign out everywhere").
 */
export function createDashboardAuthService({ orm }: { orm: MikroORM }) {
  async function openSession(user: User, now: Date): Promise<{ token: string; session: SignedIn }> {
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
  }

  /** A new one-use link for a person of a workspace: the token (for the URL) is returned this once, the row keeps its hash. */
  async function createLink(
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
  }

  /** The open link of `kind` a token names, locked in `em`'s transaction and used up now; null when unknown, used or expired. */
  async function useLink(em: EntityManager, token: string, kind: DashboardInvite['kind'], now: Date): Promise<DashboardInvite | null> {
    const link = await em.findOne(
      DashboardInvite,
      { tokenHash: tokenHash(token), kind },
      { ...ALL_TENANTS, lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!isOpen(link, now)) return null;
    link.acceptedAt = now;
    return link;
  }

  /** Closes the open links (invitations and sign-in links) of a workspace's address: they stop working now; the rows stay. */
  async function closeLinks(
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
  }

  /** Ends every session of a person. */
  async function endSessions(em: EntityManager, user: User, now: Date): Promise<number> {
    return em.nativeUpdate(DashboardSession, { orgId: user.orgId, userId: user.id, revokedAt: null }, { revokedAt: now }, ALL_TENANTS);
  }

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

  return {
    /**
     * An invitation to `orgId` for `email` as `role`: the token (for the link) is returned this
     * once. 409 conflict for an address that already has access (a password: an invitation would
     * hand its holder that person's account), and for an owner invited as a member (an invitation
     * never lowers a role). A person without a password (removed, or a first owner signed in by
     * operators' links) can be invited: that is how they choose one.
     */
    async invite(
      input: { orgId: string; email: string; role: UserRole },
      now = new Date(),
    ): Promise<{ token: string; invite: DashboardInvite }> {
      const em = scopeToOrg(orm.em, input.orgId);
      if (!(await em.findOne(Organization, { id: input.orgId })))
        throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
      const email = input.email.trim().toLowerCase();
      const existing = await em.findOne(User, { email });
      if (existing?.passwordHash)
        throw new AppError(
          'conflict',
          `${email} already has access to this workspace; they sign in with their password. Nothing was created.`,
        );
      if (existing?.role === 'owner' && input.role !== 'owner')
        throw new AppError('conflict', `${email} is an owner; an invitation cannot change their role. Nothing was created.`);
      const { token, link } = await createLink(em, { orgId: input.orgId, email, role: input.role, kind: 'invite' }, INVITE_TTL_MS, now);
      return { token, invite: link };
    },

    /** An owner cancels an open invitation of their workspace: its link stops working. 403 for a member; 404 for an unknown, used, expired or another workspace's invitation. */
    async cancelInvite(by: SignedIn, inviteId: string, now = new Date()): Promise<DashboardInvite> {
      if (by.role !== 'owner') throw new AppError('forbidden', 'Only an owner can cancel an invitation.');
      const em = scopeToOrg(orm.em, by.orgId);
      const invite = await em.findOne(DashboardInvite, { id: inviteId, kind: 'invite' });
      if (!isOpen(invite, now)) throw new AppError('not_found', `Invitation ${inviteId} is not open.`);
      invite.expiresAt = now;
      await em.flush();
      return invite;
    },

    /**
     * A one-use link that signs an existing person in (15 minutes): for operators, and printed by
     * the dev stack so `npm start` opens the dashboard signed in. The person is the workspace's
     * user with `email`, or its owner when no email is given.
     */
    async signInLink(input: { orgId: string; email?: string }, now = new Date()): Promise<{ token: string; link: DashboardInvite }> {
      const em = scopeToOrg(orm.em, input.orgId);
      const user = input.email
        ? await em.findOne(User, { email: input.email.trim().toLowerCase() })
        : await em.findOne(User, { role: 'owner' }, { orderBy: { id: 'asc' } });
      if (!user) throw new AppError('not_found', `workspace ${input.orgId} has no such person`);
      return createLink(em, { orgId: input.orgId, email: user.email, role: user.role, kind: 'sign_in' }, SIGN_IN_LINK_TTL_MS, now);
    },

    /** Uses a sign-in link: its person gets a session; null when the link is unknown, used or expired. */
    async useSignInLink(token: string, now = new Date()): Promise<{ token: string; session: SignedIn } | null> {
      const user = await orm.em.fork().transactional(async (em) => {
        const link = await useLink(em, token, 'sign_in', now);
        return link && em.findOne(User, { orgId: link.orgId, email: link.email }, ALL_TENANTS);
      });
      return user ? openSession(user, now) : null;
    },

    /** The open link a token names (an invitation, or a sign-in link with `kind`), or null (unknown, used or expired). */
    async findInvite(
      token: string,
      now = new Date(),
      kind: DashboardInvite['kind'] = 'invite',
    ): Promise<{ invite: DashboardInvite; orgName: string } | null> {
      const em = orm.em.fork();
      const invite = await em.findOne(DashboardInvite, { tokenHash: tokenHash(token), kind }, ALL_TENANTS);
      if (!isOpen(invite, now)) return null;
      const org = await em.findOne(Organization, { id: invite.orgId });
      return org ? { invite, orgName: org.name } : null;
    },

    /**
     * Accepts an invitation: the person (new, or the workspace's user with that email and no
     * password) gets the name and password, and the invitation's role unless they are an owner
     * (never lowered); the invitation and the address's other open invitations are used up, every
     * other session of the person ends, and a session opens. 409 conflict, the link used up and
     * nothing else changed, when the address has a password by now (a second invitation accepted).
     */
    async acceptInvite(
      token: string,
      input: { name: string; password: string },
      now = new Date(),
    ): Promise<{ token: string; session: SignedIn }> {
      checkPassword(input.password);
      const name = input.name.trim();
      if (name.length === 0 || name.length > 200)
        throw new AppError('invalid_request', 'Enter your name (200 characters at most).', {
          fields: [{ path: 'name', location: 'body', type: 'length', message: 'between 1 and 200 characters' }],
        });
      const passwordHash = await hash(input.password);
      const accepted = await orm.em.fork().transactional(async (em) => {
        // Locked: two tabs accepting one link make one user.
        const invite = await useLink(em, token, 'invite', now);
        if (!invite) throw new AppError('not_found', 'This invitation link is not valid any more.');
        const existing = await em.findOne(
          User,
          { orgId: invite.orgId, email: invite.email },
          { ...ALL_TENANTS, lockMode: LockMode.PESSIMISTIC_WRITE },
        );
        if (existing?.passwordHash) return { refused: existing.email };
        await em.flush();
        await closeLinks(em, invite.orgId, invite.email, now, ['invite']);
        if (!existing)
          return { user: em.create(User, { orgId: invite.orgId, email: invite.email, name, passwordHash, role: invite.role }) };
        existing.name = name;
        existing.passwordHash = passwordHash;
        if (existing.role !== 'owner') existing.role = invite.role;
        await endSessions(em, existing, now);
        return { user: existing };
      });
      if ('refused' in accepted)
        throw new AppError(
          'conflict',
          `${accepted.refused} already has access to this workspace: sign in with your password. This invitation changed nothing and is used up.`,
        );
      return openSession(accepted.user, now);
    },

    /**
     * Signs in with email and password. The same email may belong to several workspaces: the
     * oldest account whose password matches wins. Null for a wrong email or password (the same
     * answer and about the same time for both).
     */
    async signIn(email: string, password: string, now = new Date()): Promise<{ token: string; session: SignedIn } | null> {
      if (password.length > PASSWORD_MAX) return null;
      const users = await orm.em
        .fork()
        .find(
          User,
          { email: email.trim().toLowerCase(), passwordHash: { $ne: null } },
          { ...ALL_TENANTS, orderBy: { id: 'asc' }, limit: 5 },
        );
      for (const user of users) {
        if (await verify(user.passwordHash!, password)) return openSession(user, now);
      }
      if (users.length === 0) await verify(await (decoyHash ??= hash(newToken())), password);
      return null;
    },

    /** The live session a cookie token names, or null; refreshes its last use at most once a minute. */
    async resolve(token: string, now = new Date()): Promise<SignedIn | null> {
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

    /** The workspace's people (oldest first) and its open invitations (newest first). */
    async people(orgId: string, now = new Date()): Promise<{ users: User[]; invitations: DashboardInvite[] }> {
      const em = scopeToOrg(orm.em, orgId);
      const [users, invitations] = await Promise.all([
        em.find(User, {}, { orderBy: { id: 'asc' } }),
        em.fork().find(DashboardInvite, { kind: 'invite', acceptedAt: null, expiresAt: { $gt: now } }, { orderBy: { id: 'desc' } }),
      ]);
      return { users, invitations };
    },

    /**
     * An owner ends another person's access: their password goes (they need a new invitation to
     * come back), every session of theirs ends at once, and their open invitations and sign-in
     * links stop working. Their API keys stay (keys are the
     * workspace's). 403 for a member, 409 for one's own access; 404 for another workspace's person.
     */
    async revokeAccess(by: SignedIn, userId: string, now = new Date()): Promise<User> {
      if (by.role !== 'owner') throw new AppError('forbidden', "Only an owner can remove a person's access.");
      if (userId === by.userId) throw new AppError('conflict', 'You cannot remove your own access; another owner can.');
      const em = scopeToOrg(orm.em, by.orgId);
      const user = await em.findOne(User, { id: userId });
      if (!user) throw new AppError('not_found', `Person ${userId} does not exist.`);
      user.passwordHash = null;
      await em.flush();
      await endSessions(em, user, now);
      await closeLinks(em, user.orgId, user.email, now);
      return user;
    },

    /** Ends one session. */
    async signOut(sessionId: string, now = new Date()): Promise<void> {
      await orm.em.fork().nativeUpdate(DashboardSession, { id: sessionId, revokedAt: null }, { revokedAt: now }, ALL_TENANTS);
    },

    /** Ends every session of the person (every browser, this one included). */
    async signOutEverywhere(signedIn: SignedIn, now = new Date()): Promise<number> {
      return scopeToOrg(orm.em, signedIn.orgId).nativeUpdate(
        DashboardSession,
        { userId: signedIn.userId, revokedAt: null },
        { revokedAt: now },
      );
    },
  };
}

/** A password the dashboard accepts: 12 to 200 characters. */
function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw new AppError('invalid_request', `Choose a password of ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`, {
      fields: [{ path: 'password', location: 'body', type: 'length', message: `between ${PASSWORD_MIN} and ${PASSWORD_MAX} characters` }],
    });
  }
}

export type DashboardAuthService = ReturnType<typeof createDashboardAuthService>;
