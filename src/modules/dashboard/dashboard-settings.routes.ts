import type { Organization } from '../../../db/entities/index.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { POSTAL_ADDRESS_MAX, WORKSPACE_NAME_MAX } from '../orgs/orgs.service.ts';
import { settingsPage, type SettingsPageModel } from './dashboard-settings.pages.ts';
import { form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const LIMITS = { name: WORKSPACE_NAME_MAX, postalAddress: POSTAL_ADDRESS_MAX };

/**
 * The workspace settings page (/dashboard/settings): its name and the postal address broadcasts
 * print in their footer (what `herald admin org postal-address` sets). Everyone reads them;
 * only owners change them (403 for a member's post, nothing changed).
 */
export function settingsArea(services: Pick<ApiServices, 'orgs'>): DashboardArea {
  const { orgs } = services;
  return (router, kit: DashboardKit) => {
    async function render(ctx: DashboardContext, status: number, extra: Partial<SettingsPageModel> & { org?: Organization } = {}) {
      const signedIn = kit.signedInOf(ctx);
      const org = extra.org ?? (await orgs.getOrganization(signedIn.orgId));
      // The header shows the name as saved, not the one the session loaded before a rename.
      kit.send(ctx, status, settingsPage({ signedIn: { ...signedIn, orgName: org.name }, org, limits: LIMITS, ...extra }));
    }

    router.get('/settings', kit.requireSession, (ctx) =>
      render(ctx, 200, ctx.query.saved === '1' ? { notice: 'The settings were saved.' } : {}),
    );

    router.post('/settings', kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const values = { name: one(form(ctx).name), postalAddress: one(form(ctx).postal_address) };
      if (signedIn.role !== 'owner') return render(ctx, 403, { error: 'Only an owner can change the workspace settings.' });
      try {
        await orgs.updateWorkspace(signedIn.orgId, { name: values.name, postalAddress: values.postalAddress });
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'invalid_request') throw error;
        return render(ctx, 400, { error: `Not saved: ${error.message}.`, values });
      }
      ctx.redirect('/dashboard/settings?saved=1');
      ctx.status = 303;
    });
  };
}
