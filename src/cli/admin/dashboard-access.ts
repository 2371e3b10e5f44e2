import { type CommandGroup, json, required, UsageError } from './options.ts';

/** Dashboard access: invitations and one-use sign-in links. */
export const dashboardAccessCommands: CommandGroup = (svc) => ({
  invite: {
    usage: 'invite --org ID --email E [--role owner|member]',
    options: { ...json, org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
    async run(values) {
      const role = values.role ?? 'member';
      if (role !== 'owner' && role !== 'member') throw new UsageError('--role must be owner or member');
      const services = svc();
      const { token, invite } = await services.dashboard.invite({
        orgId: required(values, 'org'),
        email: required(values, 'email'),
        role,
      });
      const url = `${services.publicUrl}/dashboard/invite/${token}`;
      return {
        json: {
          invite_id: invite.id,
          org_id: invite.orgId,
          email: invite.email,
          role: invite.role,
          url,
          expires_at: invite.expiresAt.toISOString(),
        },
        text: `invitation for ${invite.email} (${invite.role}), valid until ${invite.expiresAt.toISOString()}:\n${url}`,
      };
    },
  },
  'sign-in-link': {
    usage: 'sign-in-link --org ID [--email E]   (one use, 15 minutes; the owner when no email)',
    options: { ...json, org: { type: 'string' }, email: { type: 'string' } },
    async run(values) {
      const services = svc();
      const { token, link } = await services.dashboard.signInLink({
        orgId: required(values, 'org'),
        ...(typeof values.email === 'string' ? { email: values.email } : {}),
      });
      const url = `${services.publicUrl}/dashboard/sign-in/${token}`;
      return {
        json: { org_id: link.orgId, email: link.email, url, expires_at: link.expiresAt.toISOString() },
        text: `sign-in link for ${link.email}, valid until ${link.expiresAt.toISOString()}:\n${url}`,
      };
    },
  },
});
