import type Router from '@koa/router';
import * as v from 'valibot';
import type { WebhookEndpoint } from '../../../db/entities/index.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import { CreateWebhookBody, UpdateWebhookBody, WEBHOOK_LIMITS } from '../webhooks/webhooks.schemas.ts';
import type { EndpointPageModel } from './dashboard-webhook-endpoint.pages.ts';
import { deleteEndpointPage, endpointFormPage, type EndpointFormValues } from './dashboard-webhook-form.pages.ts';
import { BASE } from './dashboard-webhooks.pages.ts';
import { notePage } from './dashboard.pages.ts';
import { form, many, one, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/** What these routes need of the webhooks area (dashboard-webhooks.routes.ts). */
interface EndpointPages {
  renderEndpoint(ctx: DashboardContext, status: number, endpoint: WebhookEndpoint, extra?: Partial<EndpointPageModel>): Promise<void>;
  endpointOf(ctx: DashboardContext, id: string): Promise<WebhookEndpoint | null>;
}

/** How often the page of a test event on its way reloads itself (seconds). */
const TEST_RELOAD_SECONDS = 1;
const EVENT_ID = /^[0-9a-f]{24}$/;

/** The form's fields as typed (trimmed where the API trims). */
function valuesOf(ctx: DashboardContext): EndpointFormValues {
  const fields = form(ctx);
  return { name: one(fields.name), url: one(fields.url).trim(), description: one(fields.description), events: many(fields.events) };
}

/** A refusal's field problems as "field: what is wrong" (valibot's, or the service's `details.fields`). */
function problemsOf(error: unknown): string[] | null {
  if (error instanceof v.ValiError) {
    return (error as v.ValiError<v.GenericSchema>).issues.map(
      (issue) => `${v.getDotPath(issue)?.split('.')[0] ?? 'form'}: ${issue.message}`,
    );
  }
  if (error instanceof AppError && error.code === 'invalid_request') {
    const fields = error.details?.fields as { path: string; message: string }[] | undefined;
    return fields?.length ? fields.map((f) => `${f.path}: ${f.message}`) : [error.message];
  }
  return null;
}

const redirect = (ctx: DashboardContext, path: string) => {
  ctx.redirect(path);
  ctx.status = 303;
};

/**
 * Adding and changing endpoints from the dashboard: the form (create, edit) with the API's
 * schemas and the service's URL rules (a person is a caller with their key mode: owners live,
 * so https only), disable and enable, a test event, and a deletion confirmed on its own page.
 */
export function webhookEditRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  { webhooks, deliveries }: Pick<ApiServices, 'webhooks' | 'deliveries'>,
  pages: EndpointPages,
): void {
  const formPage: FormPage = (ctx, status, values, endpoint, errors) =>
    kit.send(
      ctx,
      status,
      endpointFormPage({
        signedIn: kit.signedInOf(ctx),
        limits: WEBHOOK_LIMITS,
        values,
        ...(endpoint ? { endpoint } : {}),
        ...(errors ? { errors } : {}),
      }),
    );

  createRoutes(router, kit, webhooks, pages, formPage);

  router.get('/webhooks/:id/edit', kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    formPage(ctx, 200, { name: endpoint.name, url: endpoint.url, description: endpoint.description, events: endpoint.events }, endpoint);
  });

  router.post('/webhooks/:id/edit', kit.forms, kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    const values = valuesOf(ctx);
    try {
      const body = v.parse(UpdateWebhookBody, {
        name: values.name,
        url: values.url,
        description: values.description,
        events: values.events,
      });
      await change(ctx, endpoint, body);
      redirect(ctx, `${BASE}/${endpoint.id}?done=saved`);
    } catch (error) {
      const problems = problemsOf(error);
      if (!problems) throw error;
      formPage(ctx, 400, values, endpoint, problems);
    }
  });

  async function change(ctx: DashboardContext, endpoint: WebhookEndpoint, body: v.InferOutput<typeof UpdateWebhookBody>) {
    const signedIn = kit.signedInOf(ctx);
    await webhooks.updateWebhook(signedIn.orgId, kit.callerOf(signedIn).keyMode, endpoint.id, body);
  }

  for (const [action, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    router.post(`/webhooks/:id/${action}`, kit.forms, kit.requireSession, async (ctx) => {
      const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
      if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
      await change(ctx, endpoint, { enabled });
      redirect(ctx, `${BASE}/${endpoint.id}?done=${action}d`);
    });
  }

  testRoutes(router, kit, { webhooks, deliveries }, pages);
  deleteRoutes(router, kit, { webhooks, deliveries }, pages);
}

type FormPage = (ctx: DashboardContext, status: number, values: EndpointFormValues, endpoint?: WebhookEndpoint, errors?: string[]) => void;

/** The empty form and the creation (the secret shown once, on the answer to the post). */
function createRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  webhooks: ApiServices['webhooks'],
  pages: EndpointPages,
  formPage: FormPage,
): void {
  router.get('/webhooks/new', kit.requireSession, (ctx) => formPage(ctx, 200, { name: '', url: '', description: '', events: [] }));

  router.post('/webhooks', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const values = valuesOf(ctx);
    try {
      const body = v.parse(CreateWebhookBody, {
        name: values.name,
        url: values.url,
        description: values.description,
        events: values.events,
      });
      const created = await webhooks.createWebhook(signedIn.orgId, kit.callerOf(signedIn).keyMode, body);
      // The secret is shown on this answer only (a reload is refused as a form sent twice).
      await pages.renderEndpoint(ctx, 201, created.endpoint, { created: created.secret, notice: 'The endpoint was added.' });
    } catch (error) {
      if (isUnavailable(error))
        return formPage(ctx, 503, values, undefined, ['Secret encryption is not configured on this server: endpoints cannot be added.']);
      const problems = problemsOf(error);
      if (!problems) throw error;
      formPage(ctx, 400, values, undefined, problems);
    }
  });
}

const isUnavailable = (error: unknown) => error instanceof AppError && error.code === 'service_unavailable';

/** A test event: recorded, then its page waits for the fan-out's delivery and shows it. */
function testRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  { webhooks, deliveries }: Pick<ApiServices, 'webhooks' | 'deliveries'>,
  pages: EndpointPages,
): void {
  router.post('/webhooks/:id/test', kit.forms, kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    try {
      const { eventId } = await webhooks.sendTestEvent(kit.signedInOf(ctx).orgId, endpoint.id);
      redirect(ctx, `${BASE}/${endpoint.id}/tests/${eventId}`);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'conflict') throw error;
      await pages.renderEndpoint(ctx, 409, endpoint, { error: 'The endpoint is disabled: enable it to send it a test event.' });
    }
  });

  router.get('/webhooks/:id/tests/:eventId', kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    const eventId = (ctx.params.eventId ?? '').toLowerCase();
    if (!endpoint || !EVENT_ID.test(eventId)) return kit.notFound(ctx, 'test event');
    const delivery = await deliveries.findDeliveryOfEvent(kit.signedInOf(ctx).orgId, endpoint.id, eventId);
    if (delivery) return redirect(ctx, `${BASE}/deliveries/${delivery.id}`);
    // The fan-out has not made its delivery yet: this page reloads itself until it has.
    ctx.set('Refresh', String(TEST_RELOAD_SECONDS));
    kit.send(
      ctx,
      200,
      notePage(
        'Sending the test event',
        `The test event for ${endpoint.name} is on its way; this page shows its delivery once Herald has queued it (a few seconds; is Herald's worker running?).`,
        kit.signedInOf(ctx),
      ),
    );
  });
}

/** Deletion: a page says what it does, its button deletes. */
function deleteRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  { webhooks, deliveries }: Pick<ApiServices, 'webhooks' | 'deliveries'>,
  pages: EndpointPages,
): void {
  router.get('/webhooks/:id/delete', kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    const queued = await deliveries.countWaiting(kit.signedInOf(ctx).orgId, endpoint.id);
    kit.send(ctx, 200, deleteEndpointPage({ signedIn: kit.signedInOf(ctx), endpoint, queued }));
  });

  router.post('/webhooks/:id/delete', kit.forms, kit.requireSession, async (ctx) => {
    const endpoint = await pages.endpointOf(ctx, ctx.params.id ?? '');
    if (!endpoint) return kit.notFound(ctx, 'webhook endpoint');
    try {
      await webhooks.deleteWebhook(kit.signedInOf(ctx).orgId, endpoint.id);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'webhook endpoint');
      throw error;
    }
    redirect(ctx, `${BASE}?deleted=1`);
  });
}
