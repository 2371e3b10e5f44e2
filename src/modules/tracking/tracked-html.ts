import { escapeHtml } from '../../html-escape.ts';
import type { TrackingChoice } from './tracking.fns.ts';

/** An anchor's http(s) href, literal or as Mustache's escaping writes it (`/` as `&#x2F;`). */
const TRACKABLE_HREF = /(<a\b[^>]*?\shref\s*=\s*)(["'])(https?:(?:\/\/|&#x2F;&#x2F;)[^"']+)\2/gi;

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', '#39': "'", lt: '<', gt: '>', '#x2F': '/', '#x60': '`', '#x3D': '=' };

/** Entities a URL in an attribute may carry, decoded to the URL itself. */
function decodeAttribute(value: string): string {
  return value.replace(/&(amp|quot|#39|lt|gt|#x2F|#x60|#x3D);/g, (_, name: string) => ENTITIES[name] ?? '');
}

/** Every http(s) link of the HTML through its signed click URL (`skip`: links left as they are). */
export function withTrackedLinks(html: string, click: (target: string) => string, skip: (target: string) => boolean): string {
  return html.replace(TRACKABLE_HREF, (whole, start: string, quote: string, href: string) => {
    const target = decodeAttribute(href);
    return skip(target) ? whole : `${start}${quote}${escapeHtml(click(target))}${quote}`;
  });
}

/** The open pixel, before `</body>` when there is one. */
export function withOpenPixel(html: string, src: string): string {
  const pixel = `<img src="${escapeHtml(src)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px">`;
  const end = html.search(/<\/body>/i);
  return end === -1 ? `${html}${pixel}` : `${html.slice(0, end)}${pixel}${html.slice(end)}`;
}

/** The signed URLs of one message's tracking (recipient-links.ts) and the links never rewritten (its unsubscribe link). */
export interface TrackingLinks {
  open: string;
  click: (target: string) => string;
  skip: (target: string) => boolean;
}

/** The HTML of a message (not a broadcast's, which places its footer between) with its links tracked and its pixel added as `choice` says. */
export function applyTracking(html: string, choice: TrackingChoice, links: TrackingLinks): string {
  let out = choice.clicks ? withTrackedLinks(html, links.click, links.skip) : html;
  if (choice.opens) out = withOpenPixel(out, links.open);
  return out;
}
