import { ApiKey } from '../../../db/entities/index.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';

/**
 * Revokes `key` and every key made from it through the API, at any depth (api_keys.parent_key_id),
 * in one transaction; keys already revoked keep their time. Children are always of the key's
 * workspace, so the walk runs under the workspace's tenant filter.
 */
export async function revokeKeyAndDescendants(em: EntityManager, key: ApiKey, at = new Date()): Promise<void> {
  await scopeToOrg(em, key.orgId).transactional(async (tx) => {
    await tx.nativeUpdate(ApiKey, { id: key.id, revokedAt: null }, { revokedAt: at });
    const seen = new Set([key.id]);
    for (let parents = [key.id]; parents.length > 0;) {
      const children = await tx.find(ApiKey, { parentKeyId: { $in: parents } }, { fields: ['id'] });
      parents = children.map((child) => child.id).filter((id) => !seen.has(id));
      for (const id of parents) seen.add(id);
      if (parents.length > 0) await tx.nativeUpdate(ApiKey, { id: { $in: parents }, revokedAt: null }, { revokedAt: at });
    }
  });
  key.revokedAt ??= at;
}
