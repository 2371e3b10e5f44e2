import { AppError } from '../../errors.ts';
import { SCOPE_CATALOG } from '../auth/scopes.ts';
import { KEY_NAME_MAX, type WorkspaceKeysService } from '../auth/workspace-keys.service.ts';
import { form, many, one, PREFIX, type DashboardArea, type DashboardContext } from './dashboard-kit.router.ts';
import { keysPage } from './dashboard.pages.ts';

/**
 * The workspace's API keys (/dashboard/keys), through the workspace keys service the API uses:
 * the list, creating a key (its secret shown once), revoking one. Live keys are an owner's.
 */
export function keysArea(keys: WorkspaceKeysService): DashboardArea {
  return (router, kit) => {
    async function renderKeys(ctx: DashboardContext, status: number, extra: Partial<Parameters<typeof keysPage>[0]> = {}) {
      const signedIn = kit.signedInOf(ctx);
      const page = await keys.listKeys(signedIn.orgId, { limit: 100 });
      kit.send(ctx, status, keysPage({ signedIn, keys: page.items, scopes: SCOPE_CATALOG.filter((s) => s.launch === 'public'), ...extra }));
    }

    router.get('/keys', kit.requireSession, (ctx) => renderKeys(ctx, 200));

    router.post('/keys', kit.forms, kit.requireSession, async (ctx) => {
      const fields = form(ctx);
      const input = { name: one(fields.name).trim(), mode: one(fields.mode) || 'test', scopes: many(fields.scopes) };
      try {
        if (input.name.length === 0 || input.name.length > KEY_NAME_MAX)
          throw new AppError('invalid_request', `Give the key a name of 1 to ${KEY_NAME_MAX} characters.`);
        if (input.mode !== 'test' && input.mode !== 'live') throw new AppError('invalid_request', 'Choose test or live.');
        const { apiKey, key } = await keys.createKey(kit.callerOf(kit.signedInOf(ctx)), {
          name: input.name,
          scopes: input.scopes,
          mode: input.mode,
        });
        await renderKeys(ctx, 201, { created: { name: apiKey.name, secret: key } });
      } catch (error) {
        if (!(error instanceof AppError) || !['invalid_request', 'forbidden'].includes(error.code)) throw error;
        const status = error.code === 'forbidden' ? 403 : 400;
        const text =
          error.code === 'forbidden' && input.mode === 'live'
            ? 'Only an owner can create live keys.'
            : input.scopes.length === 0
              ? 'Choose at least one scope.'
              : error.message;
        await renderKeys(ctx, status, { error: text, form: input });
      }
    });

    router.post('/keys/:id/revoke', kit.forms, kit.requireSession, async (ctx) => {
      try {
        await keys.revokeKey(kit.signedInOf(ctx).orgId, ctx.params.id ?? '');
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'key');
        throw error;
      }
      ctx.redirect(`${PREFIX}/keys`);
      ctx.status = 303;
    });
  };
}
