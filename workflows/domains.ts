import { continueAsNew, executeChild, log, proxyActivities } from '@temporalio/workflow';
import { HeraldKind, HeraldOrgId } from './search-attributes.ts';

/** The contract of a domain's verification, written once: src/ imports these. */
export const VERIFY_DOMAIN_WORKFLOW = 'verifyDomain';
export const DOMAIN_VERIFY_KIND = 'domain-verify';

export interface VerifyDomainInput {
  orgId: string;
  domainId: string;
}

/** Business id of a domain's verification run: one at a time per domain. */
export function domainVerifyWorkflowId(domainId: string): string {
  return `${DOMAIN_VERIFY_KIND}:${domainId}`;
}

/** A domain's status (db/entities/domain.ts DOMAIN_STATUSES). */
export type DomainStatus = 'pending' | 'verified' | 'attention';

/** One DNS record of a domain as a check saw it: what to publish and what DNS answered. */
export interface DomainCheckRecord {
  type: 'TXT' | 'CNAME' | 'MX';
  name: string;
  value: string;
  required: boolean;
  status: 'verified' | 'missing' | 'mismatch' | 'unknown';
  /** What DNS returned (several joined by a newline), or null. */
  found: string | null;
}

/** The result of one DNS check of a domain (small: it travels through workflow history). */
export interface DomainCheckOutcome {
  orgId: string;
  domainId: string;
  domain: string;
  previousStatus: DomainStatus;
  status: DomainStatus;
  checkedAt: string;
  records: Record<'spf' | 'dkim' | 'dmarc' | 'return_path', DomainCheckRecord>;
}

/** Domains due for a re-check, and where the next page starts. */
export interface RecheckPage {
  domains: VerifyDomainInput[];
  nextAfterId: string | null;
}

/** The verification activities (activities/domains.ts implements them). */
export interface DomainActivities {
  checkDomainDns(input: VerifyDomainInput): Promise<DomainCheckOutcome>;
  listDomainsForRecheck(input: { afterId: string | null; limit: number }): Promise<RecheckPage>;
}

const { checkDomainDns } = proxyActivities<DomainActivities>({
  // Four lookups in parallel, each bounded by DNS_TIMEOUT_MS and one retry.
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5s', maximumInterval: '1 minute', maximumAttempts: 5 },
});

const { listDomainsForRecheck } = proxyActivities<DomainActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '10s', maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/**
 * verifyDomain — id `domain-verify:<domainId>`, HeraldOrgId = the domain's workspace,
 * HeraldKind = domain-verify. Checks the domain's DNS records once and records the result
 * (pending → verified, verified ⇄ attention; DNS unreachable changes nothing), and its custom
 * tracking host's CNAME when it has one (pending ⇄ verified, with its own events). Started by
 * `herald admin domain verify` and by recheckDomains.
 */
export async function verifyDomain(input: VerifyDomainInput): Promise<DomainCheckOutcome> {
  return checkDomainDns(input);
}

export interface RecheckTotals {
  checked: number;
  changed: number;
  failed: number;
  /** A verification of that domain was already running. */
  skipped: number;
}

/** Domains per page: each page is one history segment; the next page continues as new. */
const PAGE_SIZE = 100;
/** Verifications running at once. */
const CONCURRENCY = 5;

/** Mirrors src/temporal/search-attributes.ts (workflow code may not import src/). */
function verifySearchAttributes(orgId: string) {
  return [
    { key: HeraldOrgId, value: orgId },
    { key: HeraldKind, value: DOMAIN_VERIFY_KIND },
  ];
}

function isAlreadyStarted(error: unknown): boolean {
  return error instanceof Error && error.name === 'WorkflowExecutionAlreadyStartedError';
}

/**
 * recheckDomains — started daily by the Schedule `<prefix>-recheck-domains`. Re-verifies
 * every verified and attention domain (and its tracking host) as child verifyDomain runs, CONCURRENCY at a time, a
 * page of PAGE_SIZE per run (continue-as-new between pages keeps history small). A domain
 * whose verification is already running is skipped; one failed check does not stop the rest.
 */
export async function recheckDomains(input: { afterId?: string | null; totals?: RecheckTotals } = {}): Promise<RecheckTotals> {
  const totals: RecheckTotals = { checked: 0, changed: 0, failed: 0, skipped: 0, ...input.totals };
  const page = await listDomainsForRecheck({ afterId: input.afterId ?? null, limit: PAGE_SIZE });
  let next = 0;
  const lane = async () => {
    while (next < page.domains.length) {
      const target = page.domains[next]!;
      next += 1;
      try {
        const outcome = await executeChild(verifyDomain, {
          workflowId: domainVerifyWorkflowId(target.domainId),
          args: [target],
          typedSearchAttributes: verifySearchAttributes(target.orgId),
          workflowExecutionTimeout: '10 minutes',
        });
        totals.checked += 1;
        if (outcome.status !== outcome.previousStatus) totals.changed += 1;
      } catch (error) {
        if (isAlreadyStarted(error)) {
          totals.skipped += 1;
        } else {
          totals.failed += 1;
          log.warn('domain re-check failed', { domainId: target.domainId, error: String(error) });
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  if (page.nextAfterId) return continueAsNew<typeof recheckDomains>({ afterId: page.nextAfterId, totals });
  log.info('domains re-checked', { ...totals });
  return totals;
}
