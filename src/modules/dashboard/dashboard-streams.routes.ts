import * as v from 'valibot';
import type { ApiServices } from '../../api-composition.ts';
import { CreateStreamBody, StreamName, UpdateStreamBody } from '../streams/streams.schemas.ts';
import { STREAMS, streamPage, streamsPage, type StreamForm, type StreamsPageModel } from './dashboard-streams.pages.ts';
import { form, isError, one, orNotFound, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const problemsOf = (issues: readonly v.BaseIssue<unknown>[]) => {
  const problems: Record<string, string> = {};
  for (const issue of issues) problems[v.getDotPath(issue) ?? 'name'] ??= issue.message;
  return problems;
};

/** A budget typed in a form: empty is none (null); anything else must parse as a number (the schema checks the rest). */
const capOf = (typed: string): number | null => (typed.trim() === '' ? null : Number(typed.trim()));

/**
 * The message streams pages (/dashboard/streams), through the same streams service as
 * /api/v1/streams: the list with today's sends against each budget, creating a custom stream,
 * changing a stream's budget and description, deleting a custom one. Refusals are shown by field.
 */
export function streamsArea(services: ApiServices): DashboardArea {
  const { streams } = services;
  return (router, kit: DashboardKit) => {
    const renderList = async (ctx: DashboardContext, status: number, extra: Partial<StreamsPageModel> = {}) => {
      const signedIn = kit.signedInOf(ctx);
      const notice = { created: 'Stream created.', deleted: 'Stream deleted.' }[one(ctx.query.done)];
      kit.send(ctx, status, streamsPage({ signedIn, streams: await streams.listStreams(signedIn.orgId), notice, ...extra }));
    };
    const streamOf = async (ctx: DashboardContext) => {
      const name = v.safeParse(StreamName, (ctx.params as { name?: string }).name ?? '');
      return name.success ? orNotFound(streams.getStream(kit.signedInOf(ctx).orgId, name.output)) : null;
    };

    router.get('/streams', kit.requireSession, (ctx) => renderList(ctx, 200));

    router.post('/streams', kit.forms, kit.requireSession, async (ctx) => {
      const f = form(ctx);
      const typed: StreamForm = {
        name: one(f.name).trim(),
        kind: one(f.kind),
        description: one(f.description),
        daily_cap: one(f.daily_cap),
      };
      const parsed = v.safeParse(CreateStreamBody, { ...typed, daily_cap: capOf(typed.daily_cap) }, { abortEarly: false });
      const error = 'The stream was not created: see the fields marked below.';
      if (!parsed.success) return renderList(ctx, 400, { form: typed, problems: problemsOf(parsed.issues), error });
      try {
        await streams.createStream(kit.signedInOf(ctx).orgId, parsed.output);
      } catch (caught) {
        if (!isError(caught, 'conflict')) throw caught;
        return renderList(ctx, 409, { form: typed, problems: { name: 'is already the name of a stream' }, error: caught.message });
      }
      ctx.redirect(`${STREAMS}?done=created`);
      ctx.status = 303;
    });

    router.get('/streams/:name', kit.requireSession, async (ctx) => {
      const stream = await streamOf(ctx);
      if (!stream) return kit.notFound(ctx, 'stream');
      const notice = ctx.query.done === 'saved' ? 'Saved.' : undefined;
      kit.send(ctx, 200, streamPage({ signedIn: kit.signedInOf(ctx), stream, notice }));
    });

    router.post('/streams/:name', kit.forms, kit.requireSession, async (ctx) => {
      const stream = await streamOf(ctx);
      if (!stream) return kit.notFound(ctx, 'stream');
      const signedIn = kit.signedInOf(ctx);
      const typed = { description: one(form(ctx).description), daily_cap: one(form(ctx).daily_cap) };
      const parsed = v.safeParse(UpdateStreamBody, { ...typed, daily_cap: capOf(typed.daily_cap) }, { abortEarly: false });
      if (!parsed.success) {
        const page = streamPage({
          signedIn,
          stream,
          form: typed,
          problems: problemsOf(parsed.issues),
          error: 'Not saved: see the fields marked below.',
        });
        return kit.send(ctx, 400, page);
      }
      await streams.updateStream(signedIn.orgId, stream.name, parsed.output);
      ctx.redirect(`${STREAMS}/${stream.name}?done=saved`);
      ctx.status = 303;
    });

    router.post('/streams/:name/delete', kit.forms, kit.requireSession, async (ctx) => {
      const stream = await streamOf(ctx);
      if (!stream) return kit.notFound(ctx, 'stream');
      const signedIn = kit.signedInOf(ctx);
      try {
        await streams.deleteStream(signedIn.orgId, stream.name);
      } catch (caught) {
        if (!isError(caught, 'conflict')) throw caught;
        return kit.send(ctx, 409, streamPage({ signedIn, stream, error: caught.message }));
      }
      ctx.redirect(`${STREAMS}?done=deleted`);
      ctx.status = 303;
    });
  };
}
