import { LockMode, type EntityManager, type MikroORM } from '@mikro-orm/postgresql';
import { hash, verify } from '@node-rs/argon2';
import { DashboardInvite, Organization, User, type UserRole } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import {
  createLinkRecords,
  createSessionRecords,
  isOpen,
  newToken,
  type LinkRecords,
  type SessionRecords,
  type SignedIn,
} from './dashboard-sessions.ts';

export { sameToken, SESSION_IDLE_MS, SESSION_MAX_MS, type SignedIn } from './dashboard-sessions.ts';

/** An invitation link works for 7 days, once; an operator's sign-in link 15 minutes, once. */
export const INVITE_TTL_MS = 7 * 86_400_000;
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;
/** Passwords: 12 characters at least (NIST 800-63B's length-over-composition advice), 200 at most. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

/** A hash to verify against when no user matches, so an unknown email costs the same time as a wrong password. */
let decoyHash: Promise<string> | null = null;

interface Records {
  orm: MikroORM;
  links: LinkRecords;
  sessions: SessionRecords;
}

/**
 * The person an invitation makes or completes, in `em`'s transaction: new, or the workspace's
 * user with that email and no password (name, password, and the invitation's role unless they are
 * an owner); the address's other open invitations close and the person's other sessions end.
 * `refused` when the address has a password by now (the link is used up all the same).
 */
async function takeInvitation(
  { links, sessions }: Records,
  em: EntityManager,
  token: string,
  person: { name: string; passwordHash: string },
  now: Date,
): Promise<{ user: User } | { refused: string }> {
  // Locked: two tabs accepting one link make one user.
  const invite = await links.use(em, token, 'invite', now);
  if (!invite) throw new AppError('not_found', 'This invitation link is not valid any more.');
  const existing = await em.findOne(
    User,
    { orgId: invite.orgId, email: invite.email },
    { ...ALL_TENANTS, lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (existing?.passwordHash) return { refused: existing.email };
  await em.flush();
  await links.close(em, invite.orgId, invite.email, now, ['invite']);
  if (!existing) return { user: em.create(User, { orgId: invite.orgId, email: invite.email, ...person, role: invite.role }) };
  Object.assign(existing, person);
  if (existing.role !== 'owner') existing.role = invite.role;
  await sessions.endAll(em, existing, now);
  return { user: existing };
}

/** Invitations: made by operators (`herald admin invite`), listed and cancelled by owners, accepted once with a name and password. */
function createInvitations(records: Records) {
  const { orm, links, sessions } = records;
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
      const { token, link } = await links.create(em, { orgId: input.orgId, email, role: input.role, kind: 'invite' }, INVITE_TTL_MS, now);
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

    /** The open link a token names (an invitation, or a sign-in link with `kind`), or null (unknown, used or expired). */
    async findInvite(
      token: string,
      now = new Date(),
      kind: DashboardInvite['kind'] = 'invite',
    ): Promise<{ invite: DashboardInvite; orgName: string } | null> {
      const invite = await links.find(token, kind, now);
      const org = invite && (await orm.em.fork().findOne(Organization, { id: invite.orgId }));
      return invite && org ? { invite, orgName: org.name } : null;
    },

    /**
     * Accepts an invitation (takeInvitation) and opens a session. 409 conflict, the link used up
     * and nothing else changed, when the address has a password by now (a second invitation accepted).
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
      const accepted = await orm.em.fork().transactional((em) => takeInvitation(records, em, token, { name, passwordHash }, now));
      if ('refused' in accepted)
        throw new AppError(
          'conflict',
          `${accepted.refused} already has access to this workspace: sign in with your password. This invitation changed nothing and is used up.`,
        );
      return sessions.open(accepted.user, now);
    },
  };
}

/** Signing in: with email and password, or with an operator's one-use link. */
function createSignIn({ orm, links, sessions }: Records) {
  return {
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
      return links.create(em, { orgId: input.orgId, email: user.email, role: user.role, kind: 'sign_in' }, SIGN_IN_LINK_TTL_MS, now);
    },

    /** Uses a sign-in link: its person gets a session; null when the link is unknown, used or expired. */
    async useSignInLink(token: string, now = new Date()): Promise<{ token: string; session: SignedIn } | null> {
      const user = await orm.em.fork().transactional(async (em) => {
        const link = await links.use(em, token, 'sign_in', now);
        return link && em.findOne(User, { orgId: link.orgId, email: link.email }, ALL_TENANTS);
      });
      return user ? sessions.open(user, now) : null;
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
        if (await verify(user.passwordHash!, password)) return sessions.open(user, now);
      }
      if (users.length === 0) await verify(await (decoyHash ??= hash(newToken())), password);
      return null;
    },
  };
}

/** A workspace's people: listed with its open invitations; an owner ends another person's access. */
function createPeople({ orm, links, sessions }: Records) {
  return {
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
     * links stop working. Their API keys stay (keys are the workspace's). 403 for a member, 409
     * for one's own access; 404 for another workspace's person.
     */
    async revokeAccess(by: SignedIn, userId: string, now = new Date()): Promise<User> {
      if (by.role !== 'owner') throw new AppError('forbidden', "Only an owner can remove a person's access.");
      if (userId === by.userId) throw new AppError('conflict', 'You cannot remove your own access; another owner can.');
      const em = scopeToOrg(orm.em, by.orgId);
      const user = await em.findOne(User, { id: userId });
      if (!user) throw new AppError('not_found', `Person ${userId} does not exist.`);
      user.passwordHash = null;
      await em.flush();
      await sessions.endAll(em, user, now);
      await links.close(em, user.orgId, user.email, now);
      return user;
    },
  };
}

/**
 * People on the dashboard: invitations (created by operators, `herald admin invite`), password
 * sign-in (argon2id), and server-side sessions (dashboard-sessions.ts). Sessions end on sign-out,
 * after 12 idle hours or 7 days, or all at once ("sign out everywhere").
 */
export function createDashboardAuthService({ orm }: { orm: MikroORM }) {
  const records: Records = { orm, links: createLinkRecords(orm), sessions: createSessionRecords(orm) };
  const { resolve, signOut, signOutEverywhere } = records.sessions;
  return { ...createInvitations(records), ...createSignIn(records), ...createPeople(records), resolve, signOut, signOutEverywhere };
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
