import * as v from 'valibot';
import { isId } from '../../../db/ids.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { AppError } from '../../errors.ts';
import type { ApiServices } from '../../api-composition.ts';
import { ListEmailsQuery, type ListEmailsFilters } from '../sends/sends.schemas.ts';
import { emailPage, emailsPage, type EmailFilters } from './dashboard-emails.pages.ts';
import type { DashboardArea, DashboardKit } from './dashboard-kit.router.ts';

/** Emails per page of the log. */
const PAGE_SIZE = 50;

/** The log's filters on the page: GET /outbox/emails' `status`, `to` and `from`. */
const FILTERS = ['status', 'to', 'from'] as const;

/** What the filter fields are called on the page, for the API's messages about them. */
const FIELD_LABELS: Record<string, string> = { status: 'Status', to: 'Recipient', from: 'From' };

/**
 * Where an older page starts, in the link: `<created_at in ms>.<id>` of the last email shown,
 * the API's keyset position (createdAt, id). It need not be signed: the read is confined to the
 * signed-in workspace, so an edited position only moves the window.
 */
const POSITION = /^(\d{1,15})\.([a-f0-9]{24})$/;

function positionOf(value: unknown): KeysetPosition | undefined {
  const match = typeof value === 'string' ? POSITION.exec(value) : null;
  return match ? { sortValue: new Date(Number(match[1])), id: match[2]! } : undefined;
}

const text = (value: unknown) => (typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '');

/** A link to the log with these filters (empty ones left out), from `older` when given. */
function logHref(filters: EmailFilters, older?: string): string {
  const query = new URLSearchParams();
  for (const name of FILTERS) if (filters[name].trim() !== '') query.set(name, filters[name].trim());
  if (older) query.set('older', older);
  const search = query.toString();
  return search ? `/dashboard/emails?${search}` : '/dashboard/emails';
}

/**
 * The emails pages of the dashboard (/dashboard/emails): the email log with the API's filters
 * (status, recipient, from; GET /outbox/emails' rules) and keyset paging, and one email with each
 * recipient's timeline (GET /outbox/emails/{id}: its recipients and events), through the sends service.
 */
export function emailsArea(services: ApiServices): DashboardArea {
  const { sends } = services;

  return (router, kit: DashboardKit) => {
    router.get('/emails', kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const filters: EmailFilters = { status: text(ctx.query.status), to: text(ctx.query.to), from: text(ctx.query.from) };
      const given = Object.fromEntries(FILTERS.filter((name) => filters[name].trim() !== '').map((name) => [name, filters[name]]));
      const parsed = v.safeParse(ListEmailsQuery, given, { abortEarly: false });
      if (!parsed.success) {
        const problems = parsed.issues.map((issue) => {
          const path = v.getDotPath(issue) ?? '';
          return `${FIELD_LABELS[path] ?? path}: ${issue.message}.`;
        });
        return kit.send(
          ctx,
          400,
          emailsPage({
            signedIn,
            filters,
            emails: [],
            recipients: new Map(),
            olderHref: null,
            newestHref: null,
            error: problems.join(' '),
          }),
        );
      }
      const { limit: _limit, cursor: _cursor, ...query } = parsed.output;
      const after = positionOf(ctx.query.older);
      const page = await sends.listEmails(
        signedIn.orgId,
        { limit: PAGE_SIZE, after },
        query satisfies Omit<ListEmailsFilters, 'limit' | 'cursor'>,
      );
      const last = page.items.at(-1);
      kit.send(
        ctx,
        200,
        emailsPage({
          signedIn,
          filters,
          emails: page.items,
          recipients: page.recipients,
          olderHref: page.hasMore && last ? logHref(filters, `${last.createdAt.getTime()}.${last.id}`) : null,
          newestHref: after ? logHref(filters) : null,
        }),
      );
    });

    router.get('/emails/:id', kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const id = ctx.params.id ?? '';
      try {
        if (!isId(id)) throw new AppError('not_found', 'no such email');
        const { email, recipients, events } = await sends.getEmailWithEvents(signedIn.orgId, id);
        kit.send(ctx, 200, emailPage({ signedIn, email, recipients, events }));
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'email');
        throw error;
      }
    });
  };
}
