import type { MikroORM } from '@mikro-orm/postgresql';
import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import { Domain } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import {
  DOMAIN_VERIFY_KIND,
  VERIFY_DOMAIN_WORKFLOW,
  domainVerifyWorkflowId,
  type DomainCheckOutcome,
  type verifyDomain,
} from '../../../workflows/domains.ts';
import type { Config } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { connectTemporalClient } from '../../temporal/client.ts';
import { workflowSearchAttributes } from '../../temporal/search-attributes.ts';

export { domainVerifyWorkflowId };

/**
 * Starts verifyDomain for a domain (or joins the run already in progress for it) and waits
 * for its outcome. Gives up waiting after `timeoutMs` with 503 service_unavailable (no worker
 * polling?); the run itself stays queued and completes once a worker picks it up.
 */
export async function runDomainVerification(
  client: Client,
  config: Pick<Config, 'temporal'>,
  target: { orgId: string; domainId: string },
  timeoutMs: number,
): Promise<DomainCheckOutcome> {
  const handle = await client.workflow.start<typeof verifyDomain>(VERIFY_DOMAIN_WORKFLOW, {
    workflowId: domainVerifyWorkflowId(target.domainId),
    taskQueue: config.temporal.taskQueue,
    args: [target],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    workflowExecutionTimeout: '10 minutes',
    typedSearchAttributes: workflowSearchAttributes(target.orgId, DOMAIN_VERIFY_KIND),
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(
        new AppError(
          'service_unavailable',
          `no result within ${Math.round(timeoutMs / 1000)} s: is a worker polling ${config.temporal.taskQueue}? ` +
            `(workflow ${handle.workflowId} stays queued)`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([handle.result(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For operators (`herald admin domain verify ID`): finds the domain in any workspace, runs its
 * verification through Temporal and returns the outcome.
 */
export function createDomainVerificationRunner(deps: { orm: MikroORM; config: Pick<Config, 'temporal'> }) {
  return {
    async verify(domainId: string, timeoutMs: number): Promise<DomainCheckOutcome> {
      const domain = await deps.orm.em.fork().findOne(Domain, { id: domainId }, ALL_TENANTS);
      if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
      const temporal = await connectTemporalClient(deps.config);
      try {
        return await runDomainVerification(temporal.client, deps.config, { orgId: domain.orgId, domainId: domain.id }, timeoutMs);
      } finally {
        await temporal.close();
      }
    },
  };
}

/** How long a person waits for a check started from the dashboard before the page answers. */
export const DOMAIN_CHECK_WAIT_MS = 20_000;

/**
 * Checks of a workspace's own domain (the dashboard's "Check now"): the same verifyDomain run
 * as operators start, on the api's Temporal client; 404 for another workspace's domain.
 */
export function createDomainChecks(deps: { orm: MikroORM; temporal: Client; config: Pick<Config, 'temporal'> }) {
  return {
    async check(orgId: string, domainId: string, timeoutMs = DOMAIN_CHECK_WAIT_MS): Promise<DomainCheckOutcome> {
      const domain = await scopeToOrg(deps.orm.em, orgId).findOne(Domain, { id: domainId });
      if (!domain) throw new AppError('not_found', `Domain ${domainId} does not exist.`);
      return runDomainVerification(deps.temporal, deps.config, { orgId, domainId: domain.id }, timeoutMs);
    },
  };
}

export type DomainChecks = ReturnType<typeof createDomainChecks>;
