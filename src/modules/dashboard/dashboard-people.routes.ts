import { AppError } from '../../errors.ts';
import type { DashboardAuthService } from './dashboard-auth.service.ts';
import { peoplePage, type PeoplePageModel } from './dashboard-people.pages.ts';
import { form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/** A plausible email address (the invitation's person signs in with it). */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * The people of the workspace (/dashboard/people): everyone sees who has access and the open
 * invitations; owners invite (the link is shown once, as `herald admin invite` prints it; not for
 * an address that already has access), cancel invitations and remove a person's access.
 */
export function peopleArea(deps: { auth: DashboardAuthService; publicUrl: string }): DashboardArea {
  const { auth } = deps;
  return (router, kit: DashboardKit) => {
    async function render(ctx: DashboardContext, status: number, extra: Partial<PeoplePageModel> = {}): Promise<void> {
      const signedIn = kit.signedInOf(ctx);
      kit.send(ctx, status, peoplePage({ signedIn, ...(await auth.people(signedIn.orgId)), ...extra }));
    }

    router.get('/people', kit.requireSession, (ctx) => render(ctx, 200));

    router.post('/people', kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const email = one(form(ctx).email).trim().toLowerCase();
      const role = one(form(ctx).role) || 'member';
      if (signedIn.role !== 'owner') return render(ctx, 403, { error: 'Only an owner can invite people.' });
      if (!EMAIL.test(email) || email.length > 320)
        return render(ctx, 400, { error: 'Enter the email address of the person to invite.', form: { email, role } });
      if (role !== 'owner' && role !== 'member') return render(ctx, 400, { error: 'Choose member or owner.', form: { email, role } });
      try {
        const { token } = await auth.invite({ orgId: signedIn.orgId, email, role });
        await render(ctx, 201, { invited: { email, url: `${deps.publicUrl}/dashboard/invite/${token}` } });
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'conflict') throw error;
        await render(ctx, 409, { error: error.message, form: { email, role } });
      }
    });

    router.post('/people/invitations/:id/cancel', kit.forms, kit.requireSession, async (ctx) => {
      try {
        const invite = await auth.cancelInvite(kit.signedInOf(ctx), ctx.params.id ?? '');
        await render(ctx, 200, { notice: `The invitation for ${invite.email} is cancelled; its link no longer works.` });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        if (error.code === 'not_found') return kit.notFound(ctx, 'open invitation');
        await render(ctx, error.status, { error: error.message });
      }
    });

    router.post('/people/:id/revoke', kit.forms, kit.requireSession, async (ctx) => {
      try {
        const user = await auth.revokeAccess(kit.signedInOf(ctx), ctx.params.id ?? '');
        await render(ctx, 200, { notice: `${user.name} no longer has access; their sessions have ended.` });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        if (error.code === 'not_found') return kit.notFound(ctx, 'person');
        await render(ctx, error.status, { error: error.message });
      }
    });
  };
}
