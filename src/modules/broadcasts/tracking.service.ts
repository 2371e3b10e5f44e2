import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../config.ts';
import { createRecipientLinks } from './recipient-links.ts';
import { insertHit } from './tracking.repo.ts';

const MAX_TARGET_LENGTH = 2048;

/** A link target a tracked link may redirect to: an absolute http(s) URL. */
function isRedirectTarget(target: string): boolean {
  if (target.length === 0 || target.length > MAX_TARGET_LENGTH) return false;
  try {
    const url = new URL(target);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/**
 * The open pixel and tracked links of messages with tracking on: a hit whose signature holds is
 * recorded as pending (tracking-counter.ts judges it a second later: counted, repeat, or flagged
 * as a burst). A click redirects only to the exact target its link signed, so a tracked link
 * cannot be turned into a redirect anywhere else.
 */
export function createTrackingService(deps: { orm: MikroORM; config: Pick<Config, 'encryptionKeys' | 'http'> }) {
  const links = deps.config.encryptionKeys.length > 0 ? createRecipientLinks(deps.config.encryptionKeys, deps.config.http.publicUrl) : null;
  const userAgentOf = (value: string | undefined) => (value ? value.slice(0, 512) : null);

  return {
    /** Records an open for a valid pixel token; the pixel is served either way. */
    async open(token: string, userAgent: string | undefined): Promise<void> {
      const emailId = links?.checkOpen(token) ?? null;
      if (emailId) await insertHit(deps.orm.em.fork(), { emailId, kind: 'open', url: null, userAgent: userAgentOf(userAgent) });
    },

    /** The target to redirect to, with the click recorded; null when the link is not one Herald signed. */
    async click(token: string, target: string | undefined, userAgent: string | undefined): Promise<string | null> {
      if (!links || target === undefined || !isRedirectTarget(target)) return null;
      const emailId = links.checkClick(token, target);
      if (!emailId) return null;
      const known = await insertHit(deps.orm.em.fork(), { emailId, kind: 'click', url: target, userAgent: userAgentOf(userAgent) });
      return known ? target : null;
    },
  };
}

export type TrackingService = ReturnType<typeof createTrackingService>;
