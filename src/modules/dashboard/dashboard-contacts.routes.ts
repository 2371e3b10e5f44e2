import * as v from 'valibot';
import { CONTACT_STATUSES, type ContactStatus } from '../../../db/entities/index.ts';
import { isId } from '../../../db/ids.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { UpdateContactBody } from '../contacts/contacts.schemas.ts';
import { contactPage, type ContactForm } from './dashboard-contact.pages.ts';
import { contactsPage, type ContactFilters, type ContactListItem } from './dashboard-contacts.pages.ts';
import { firstText, keysetPositionOf } from './dashboard-paging.ts';
import { form, one, pathId, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/** Contacts per page of the list. */
const PAGE_SIZE = 50;
/** The search's bounds: shorter than 3 characters the trigram index cannot narrow it. */
const SEARCH_MIN = 3;
const SEARCH_MAX = 200;

function listHref(filters: ContactFilters, older?: string): string {
  const query = new URLSearchParams();
  for (const name of ['q', 'tag', 'status'] as const) if (filters[name].trim() !== '') query.set(name, filters[name].trim());
  if (older) query.set('older', older);
  const search = query.toString();
  return search ? `/dashboard/contacts?${search}` : '/dashboard/contacts';
}

/** The filters' problems, in the page's words; none when they can be searched. */
function problemsOf(filters: ContactFilters): string[] {
  const problems: string[] = [];
  const q = filters.q.trim();
  if (q !== '' && (q.length < SEARCH_MIN || q.length > SEARCH_MAX))
    problems.push(`Email or name: type ${SEARCH_MIN} to ${SEARCH_MAX} characters.`);
  if (filters.tag.trim().length > 100) problems.push('Tag: at most 100 characters.');
  if (filters.status !== '' && !(CONTACT_STATUSES as readonly string[]).includes(filters.status))
    problems.push(`Status: must be one of ${CONTACT_STATUSES.join(', ')}.`);
  return problems;
}

/** The edit form → the API's PATCH body (UpdateContactBody), or the form's problem. */
function updateOf(fields: ContactForm): v.SafeParseResult<typeof UpdateContactBody> | { success: false; message: string } {
  let custom: unknown;
  try {
    custom = fields.custom_fields.trim() === '' ? {} : JSON.parse(fields.custom_fields);
  } catch {
    return { success: false, message: 'Custom fields: write a JSON object, e.g. {"plan": "pro"}.' };
  }
  const tags = fields.tags
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '');
  return v.safeParse(UpdateContactBody, {
    email: fields.email,
    first_name: fields.first_name,
    last_name: fields.last_name,
    company: fields.company,
    tags,
    status: fields.status,
    custom_fields: custom,
  });
}

/**
 * The contacts pages (/dashboard/contacts): the list with search (a part of the email or name),
 * tag and status filters and keyset paging (GET /contacts' read); a contact's page with its
 * fields, segments and timeline; edit (PATCH /contacts/{id}'s rules) and delete; the CSV export
 * (GET /contacts/export). Imports are dashboard-contact-imports.routes.ts.
 */
export function contactsArea(services: ApiServices): DashboardArea {
  return (router, kit: DashboardKit) => {
    listRoutes(router, kit, services);
    contactRoutes(router, kit, services);
  };
}

type Router = Parameters<DashboardArea>[0];

/** The list, its search and paging, and the CSV export. */
function listRoutes(router: Router, kit: DashboardKit, { contacts }: Pick<ApiServices, 'contacts'>): void {
  router.get('/contacts', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const filters: ContactFilters = { q: firstText(ctx.query.q), tag: firstText(ctx.query.tag), status: firstText(ctx.query.status) };
    const problems = problemsOf(filters);
    const base = { signedIn, filters, olderHref: null, newestHref: null };
    if (problems.length > 0) return kit.send(ctx, 400, contactsPage({ ...base, contacts: [], error: problems.join(' ') }));
    const after = keysetPositionOf(ctx.query.older);
    const page = await contacts.listContacts(
      signedIn.orgId,
      { limit: PAGE_SIZE, after },
      {
        search: filters.q.trim() || undefined,
        tag: filters.tag.trim() || undefined,
        status: (filters.status || undefined) as ContactStatus | undefined,
      },
    );
    const items = JSON.parse(page.json) as ContactListItem[];
    kit.send(
      ctx,
      200,
      contactsPage({
        ...base,
        contacts: items,
        olderHref: page.hasMore && page.last ? listHref(filters, `${page.last.sortValue.getTime()}.${page.last.id}`) : null,
        newestHref: after ? listHref(filters) : null,
        ...(ctx.query.deleted ? { notice: 'The contact was deleted.' } : {}),
      }),
    );
  });

  router.get('/contacts/export.csv', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const status = firstText(ctx.query.status);
    const stream = await contacts.exportContacts(
      signedIn.orgId,
      { status: (CONTACT_STATUSES as readonly string[]).includes(status) ? (status as ContactStatus) : undefined },
      { escapeFormulas: true },
    );
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('Content-Disposition', `attachment; filename="contacts-${new Date().toISOString().slice(0, 10)}.csv"`);
    ctx.body = stream;
  });
}

/** One contact: its page, the edit and the delete. */
function contactRoutes(
  router: Router,
  kit: DashboardKit,
  { contacts, contactTimeline }: Pick<ApiServices, 'contacts' | 'contactTimeline'>,
): void {
  async function renderContact(ctx: DashboardContext, status: number, extra: { form?: ContactForm; notice?: string; error?: string } = {}) {
    const signedIn = kit.signedInOf(ctx);
    const id = pathId(ctx);
    try {
      if (!isId(id)) throw new AppError('not_found', 'no such contact');
      const overview = await contactTimeline.contactOverview(signedIn.orgId, id.toLowerCase());
      kit.send(ctx, status, contactPage({ signedIn, ...overview, ...extra }));
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'contact');
      throw error;
    }
  }

  router.get('/contacts/:id', kit.requireSession, (ctx) => renderContact(ctx, 200, ctx.query.saved ? { notice: 'Saved.' } : {}));

  router.post('/contacts/:id', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    const fields = Object.fromEntries(
      (['email', 'first_name', 'last_name', 'company', 'tags', 'status', 'custom_fields'] as const).map((name) => [
        name,
        one(form(ctx)[name]),
      ]),
    ) as unknown as ContactForm;
    const parsed = updateOf(fields);
    if (!parsed.success) {
      const messageText =
        'message' in parsed
          ? parsed.message
          : parsed.issues.map((issue) => `${v.getDotPath(issue) ?? 'form'}: ${issue.message}.`).join(' ');
      return renderContact(ctx, 400, { form: fields, error: messageText });
    }
    try {
      if (!isId(id)) throw new AppError('not_found', 'no such contact');
      await contacts.updateContact(signedIn.orgId, id.toLowerCase(), parsed.output);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code === 'not_found') return kit.notFound(ctx, 'contact');
      if (!['conflict', 'unprocessable_entity', 'invalid_request'].includes(error.code)) throw error;
      return renderContact(ctx, error.status, { form: fields, error: error.message });
    }
    ctx.redirect(`/dashboard/contacts/${id.toLowerCase()}?saved=1`);
    ctx.status = 303;
  });

  router.post('/contacts/:id/delete', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    try {
      if (!isId(id)) throw new AppError('not_found', 'no such contact');
      const contact = await contacts.getContact(signedIn.orgId, id.toLowerCase());
      await contacts.deleteContact(signedIn.orgId, contact.id);
      ctx.redirect('/dashboard/contacts?deleted=1');
      ctx.status = 303;
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'contact');
      throw error;
    }
  });
}
