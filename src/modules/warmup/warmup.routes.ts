import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import { IdParams } from '../../http/schemas.ts';
import type { ReputationService } from '../reputation/reputation.service.ts';
import { ReputationResponse } from '../reputation/reputation.schemas.ts';
import { DomainWarmupInput, WarmupPlanInput, WarmupPlanResponse, WarmupResponse } from './warmup.schemas.ts';
import type { WarmupService } from './warmup.service.ts';

/**
 * Herald's deliverability extensions: a domain's automatic warm-up (PATCH /domains/{id}/warmup),
 * the workspace's warm-up plan (GET, PATCH /warmup-plan), and the workspace's reputation
 * standing (GET /reputation: its policy and, while paused, why).
 */
export function createWarmupRoutes(deps: { warmup: WarmupService; reputation: ReputationService }) {
  return [
    defineRoute({
      operationId: 'updateDomainWarmup',
      method: 'PATCH',
      path: '/domains/:id/warmup',
      summary: "Start, stop or re-plan a sending domain's automatic warm-up",
      description:
        "`mode` `new` or `existing` starts that schedule of the plan from day 1 (`off` stops it); `plan` sets the fields of this domain's own plan (null: the workspace's again). Answers what the warm-up allows today.",
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      params: IdParams,
      body: DomainWarmupInput,
      response: { status: 200, description: "The domain's warm-up now", schema: WarmupResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params, body }) {
        return { status: 200, data: await deps.warmup.updateDomainWarmup(caller.orgId, params.id, body) };
      },
    }),
    defineRoute({
      operationId: 'getWarmupPlan',
      method: 'GET',
      path: '/warmup-plan',
      summary: "The workspace's warm-up plan",
      tag: 'Domains',
      scope: 'domains:read',
      extension: true,
      response: { status: 200, description: "The plan in force and the workspace's overrides", schema: WarmupPlanResponse },
      async handle({ caller }) {
        return { status: 200, data: await deps.warmup.getWorkspacePlan(caller.orgId) };
      },
    }),
    defineRoute({
      operationId: 'updateWarmupPlan',
      method: 'PATCH',
      path: '/warmup-plan',
      summary: "Set the workspace's warm-up plan",
      description:
        "The fields given replace the default plan's for every domain of the workspace without a plan of its own (null: the default again); a domain takes them at its next step.",
      tag: 'Domains',
      scope: 'domains:write',
      extension: true,
      body: v.strictObject({ plan: v.nullable(WarmupPlanInput) }),
      response: { status: 200, description: "The plan in force and the workspace's overrides", schema: WarmupPlanResponse },
      errors: ['invalid_request'],
      async handle({ caller, body }) {
        return { status: 200, data: await deps.warmup.setWorkspacePlan(caller.orgId, body.plan) };
      },
    }),
    defineRoute({
      operationId: 'getReputation',
      method: 'GET',
      path: '/reputation',
      summary: "The workspace's reputation policy and pause",
      description:
        'Past its thresholds the policy pauses broadcast sending (or all sending); `pause.reason` explains why until an operator resumes it.',
      tag: 'Domains',
      scope: 'domains:read',
      extension: true,
      response: { status: 200, description: 'The policy and the pause in force (null when sending)', schema: ReputationResponse },
      async handle({ caller }) {
        return { status: 200, data: await deps.reputation.status(caller.orgId) };
      },
    }),
  ];
}
