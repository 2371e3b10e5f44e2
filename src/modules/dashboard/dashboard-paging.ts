import { html } from 'ghtml';
import type { KeysetPosition } from '../../../db/keyset.ts';

/**
 * Keyset paging of the dashboard's lists: an older page's link carries `<created_at in ms>.<id>`
 * of the last row shown. It need not be signed: every read is confined to the signed-in
 * workspace, so an edited position only moves the window.
 */
export function keysetPositionOf(value: unknown): KeysetPosition | undefined {
  if (typeof value !== 'string') return undefined;
  const [ms = '', id = '', ...extra] = value.split('.');
  if (extra.length > 0 || !/^\d{1,15}$/.test(ms) || !/^[a-f0-9]{24}$/.test(id)) return undefined;
  return { sortValue: new Date(Number(ms)), id };
}

/** The text of a query parameter (its first value when repeated; empty when absent). */
export const firstText = (value: unknown): string => [value].flat().find((item): item is string => typeof item === 'string') ?? '';

/** The links to the newest and the next older page, when there are any. */
export function pagerNav(links: { newest: string | null; older: string | null }): string {
  if (!links.newest && !links.older) return '';
  const newest = links.newest ? html`<a href="${links.newest}">Newest</a>` : '';
  const older = links.older ? html`<a href="${links.older}" rel="next">Older</a>` : '';
  return html`<nav class="pager" aria-label="Pages">!${newest} !${older}</nav>`;
}
