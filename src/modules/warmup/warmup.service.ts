import type { MikroORM } from '@mikro-orm/postgresql';
import { Domain, Organization } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { decideStep, resolvePlan, scheduleOf, startingWarmup } from './warmup.fns.ts';
import { countUsedToday, findDueWarmups, recordStep, writeDomainWarmup } from './warmup.repo.ts';
import type { DomainWarmupInput, WarmupPlanInput } from './warmup.schemas.ts';
import { serializeWarmup, type WarmupView } from './warmup.serializer.ts';

/**
 * Automatic warm-up of sending domains: the daily evaluation of each warming domain's step
 * (run by the reputation loop in the worker), what a domain's warm-up allows today, and the
 * edits of the plan per domain and per workspace (API extension, dashboard).
 */
export function createWarmupService(deps: { orm: MikroORM }) {
  const { orm } = deps;

  async function workspacePlanOf(orgId: string): Promise<Record<string, unknown> | null> {
    const org = await orm.em.fork().findOne(Organization, { id: orgId }, { fields: ['warmupPlan'] });
    return org?.warmupPlan ?? null;
  }

  async function view(orgId: string, domain: Domain, now: Date): Promise<WarmupView> {
    const used = await countUsedToday(orm.em.fork(), orgId, domain.id, utcDay(now));
    return serializeWarmup(domain, await workspacePlanOf(orgId), used, now);
  }

  return {
    /**
     * Evaluates every warming domain whose step was last judged before `now`'s UTC day, on what
     * it sent and got back since then: advance, hold, step back or done. Resolves with how many
     * domains it moved through a decision. Idempotent per domain and day.
     */
    async evaluateDue(now: Date = new Date(), batch = 200): Promise<number> {
      const today = utcDay(now);
      const em = orm.em.fork();
      let decided = 0;
      for (;;) {
        const due = await findDueWarmups(em, today, batch);
        for (const domain of due) {
          const plan = resolvePlan(domain.workspace_plan, domain.domain_plan);
          if (await recordStep(em, domain, decideStep(plan, domain.warmup_mode, domain.warmup_step, domain), today)) decided += 1;
        }
        if (due.length < batch) return decided;
      }
    },

    /** The `warmup` view of each of the workspace's `domains`, by domain id. */
    async describe(orgId: string, domains: readonly Domain[], now: Date = new Date()): Promise<Map<string, WarmupView>> {
      const plan = await workspacePlanOf(orgId);
      const em = orm.em.fork();
      const day = utcDay(now);
      const views = await Promise.all(
        domains.map(
          async (domain) => [domain.id, serializeWarmup(domain, plan, await countUsedToday(em, orgId, domain.id, day), now)] as const,
        ),
      );
      return new Map(views);
    },

    /**
     * Starts (from day 1) or stops a domain's warm-up, and/or sets its own plan (null: the
     * workspace's again). A plan change keeps the domain's day and takes that day's cap.
     */
    async updateDomainWarmup(orgId: string, domainId: string, input: DomainWarmupInput, now: Date = new Date()): Promise<WarmupView> {
      const em = scopeToOrg(orm.em.fork(), orgId);
      const domain = await em.findOne(Domain, { id: domainId });
      if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
      const ownPlan = input.plan === undefined ? (domain.warmupPlan ?? null) : input.plan;
      const plan = resolvePlan(await workspacePlanOf(orgId), ownPlan);
      const restart = input.mode !== undefined && input.mode !== domain.warmupMode;
      const mode = input.mode ?? domain.warmupMode;
      let fields: Parameters<typeof writeDomainWarmup>[3];
      if (restart) {
        const start = startingWarmup(mode, { ...plan }, now);
        fields = { mode: start.warmupMode, step: 0, cap: start.warmupCap, plan: ownPlan, restartOn: start.warmupEvaluatedOn };
      } else if (mode === 'new' || mode === 'existing') {
        const schedule = scheduleOf(plan, mode);
        const step = Math.min(domain.warmupStep, schedule.length - 1);
        fields = { mode, step, cap: schedule[step] ?? null, plan: ownPlan, restartOn: null };
      } else {
        fields = { mode, step: domain.warmupStep, cap: null, plan: ownPlan, restartOn: null };
      }
      await writeDomainWarmup(orm.em.fork(), orgId, domainId, fields);
      const fresh = await scopeToOrg(orm.em.fork(), orgId).findOneOrFail(Domain, { id: domainId });
      return view(orgId, fresh, now);
    },

    /** The workspace's plan in force and its own overrides (null: the default plan). */
    async getWorkspacePlan(orgId: string) {
      const overrides = await workspacePlanOf(orgId);
      return { plan: resolvePlan(overrides), overrides };
    },

    /** Sets the workspace's plan overrides (null: the default plan); domains take it at their next step or restart. */
    async setWorkspacePlan(orgId: string, overrides: WarmupPlanInput | null) {
      const em = orm.em.fork();
      const org = await em.findOne(Organization, { id: orgId });
      if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
      org.warmupPlan = overrides === null || Object.keys(overrides).length === 0 ? null : { ...overrides };
      await em.flush();
      return { plan: resolvePlan(org.warmupPlan), overrides: org.warmupPlan };
    },
  };
}

export type WarmupService = ReturnType<typeof createWarmupService>;
