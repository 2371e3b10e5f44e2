import type { MikroORM } from '@mikro-orm/postgresql';
import { DmarcAddress, DmarcReport, Domain } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { DEFAULT_REPORT_LOCAL_PART } from './dmarc.fns.ts';
import { sumSources, type DmarcSource, type SourcesQuery } from './dmarc.repo.ts';

/** A domain of the workspace with its report address's local part. */
export interface DmarcSettings {
  domain: Domain;
  localPart: string;
  isDefault: boolean;
}

/**
 * A workspace's DMARC aggregate reports, per domain: the report address (default
 * `dmarc@<domain>`, another local part on request), the reports received, and who sends as the
 * domain (sums per source address). Every call names a domain of the workspace; another
 * workspace's domain, or none, is 404 not_found.
 */
export function createDmarcService(deps: { orm: MikroORM }) {
  const { orm } = deps;

  async function domainOf(orgId: string, domainId: string): Promise<Domain> {
    const domain = await scopeToOrg(orm.em.fork(), orgId).findOne(Domain, { id: domainId });
    if (!domain) throw new AppError('not_found', `domain ${domainId} does not exist`);
    return domain;
  }

  return {
    domainOf,

    /** The domain and its report address. */
    async getSettings(orgId: string, domainId: string): Promise<DmarcSettings> {
      const domain = await domainOf(orgId, domainId);
      const custom = await scopeToOrg(orm.em.fork(), orgId).findOne(DmarcAddress, { domainId });
      return { domain, localPart: custom?.localPart ?? DEFAULT_REPORT_LOCAL_PART, isDefault: !custom };
    },

    /** Sets the report address's local part (the default `dmarc` removes the custom one). */
    async setLocalPart(orgId: string, domainId: string, localPart: string): Promise<DmarcSettings> {
      const domain = await domainOf(orgId, domainId);
      const em = scopeToOrg(orm.em.fork(), orgId);
      if (localPart === DEFAULT_REPORT_LOCAL_PART) await em.nativeDelete(DmarcAddress, { domainId });
      else await em.upsert(DmarcAddress, { domainId, orgId, localPart, updatedAt: new Date() });
      return { domain, localPart, isDefault: localPart === DEFAULT_REPORT_LOCAL_PART };
    },

    /** The domain's reports, newest received first. */
    async listReports(orgId: string, domainId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      await domainOf(orgId, domainId);
      return findKeysetPage(scopeToOrg(orm.em.fork(), orgId), DmarcReport, { domainId }, page);
    },

    /** Per source address: messages and results in the reports whose period ended at or after `since`. */
    async listSources(orgId: string, query: SourcesQuery): Promise<DmarcSource[]> {
      await domainOf(orgId, query.domainId);
      return sumSources(orm.em.fork(), orgId, query);
    },
  };
}

export type DmarcService = ReturnType<typeof createDmarcService>;
