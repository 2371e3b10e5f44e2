/** Pure helpers of the inbox read API: download headers, previews, filter bounds. */

/** Longest filename put in a Content-Disposition header (characters, before encoding). */
const MAX_HEADER_FILENAME = 180;
const DEFAULT_FILENAME = 'attachment';

/**
 * Characters never kept in a downloaded filename, whatever the encoding: controls (CR and LF
 * would split the header), line/paragraph separators, bidirectional overrides (`evil\u202Efdp.exe`
 * shows as `evilexe.pdf`) and path separators.
 */
const UNSAFE_IN_FILENAME = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069/\\]/gu;

/** Cuts `name` to `max` code points, keeping a short extension (`.pdf`) at the end. */
function truncateKeepingExtension(name: string, max: number): string {
  const chars = [...name];
  if (chars.length <= max) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= 16 ? [...name.slice(dot)] : [];
  return chars.slice(0, max - extension.length).join('') + extension.join('');
}

/** The filename with unsafe characters replaced, bounded, never empty. */
export function safeFilename(filename: string): string {
  const cleaned = filename
    .replace(/\p{Cs}/gu, '\uFFFD')
    .replace(UNSAFE_IN_FILENAME, '_')
    .trim();
  const bounded = truncateKeepingExtension(cleaned, MAX_HEADER_FILENAME);
  return /^[._\s]*$/u.test(bounded) ? DEFAULT_FILENAME : bounded;
}

/**
 * The ASCII fallback for `filename="…"`: accents stripped, any other non-printable-ASCII
 * character and `"`, `\`, `%` (some browsers percent-decode this parameter) and `;` (for
 * parsers that split on it) replaced by `_`.
 */
export function asciiFilename(filename: string): string {
  const ascii = safeFilename(filename)
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]|["\\%;]/gu, '_')
    .trim();
  return /^[._\s]*$/.test(ascii) ? DEFAULT_FILENAME : ascii;
}

/** RFC 5987 `ext-value` characters: percent-encode everything outside attr-char. */
function encodeRfc5987(value: string): string {
  return encodeURIComponent(value).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `Content-Disposition: attachment` for a stored filename chosen by a stranger: an ASCII
 * `filename` for old clients and `filename*=UTF-8''…` (RFC 6266 / 5987) with the real name.
 * Whatever the input, the value is one line of printable ASCII.
 */
export function contentDisposition(filename: string): string {
  return `attachment; filename="${asciiFilename(filename)}"; filename*=UTF-8''${encodeRfc5987(safeFilename(filename))}`;
}

/** `Repr-Digest` (RFC 9530) of bytes whose SHA-256 is known in hex. */
export function reprDigest(sha256Hex: string): string {
  return `sha-256=:${Buffer.from(sha256Hex, 'hex').toString('base64')}:`;
}

/** Characters of a thread's last-message preview. */
export const SNIPPET_LENGTH = 200;

/** The first words of a text body on one line: whitespace collapsed, at most SNIPPET_LENGTH code points. */
export function snippetOf(text: string): string {
  const line = text
    .slice(0, SNIPPET_LENGTH * 4)
    .replace(/\s+/gu, ' ')
    .trim();
  const chars = [...line];
  return chars.length <= SNIPPET_LENGTH ? line : `${chars.slice(0, SNIPPET_LENGTH - 1).join('')}…`;
}

const EPOCH = new Date(0);

/**
 * The inclusive lower bound for `updated_after`, as the database compares it. Earlier than
 * 1970 matches the same rows as 1970 (nothing in Herald is older), and keeps year-0 dates,
 * which PostgreSQL refuses, out of SQL.
 */
export function updatedAfterBound(value: string): Date {
  const date = new Date(value);
  return date.getTime() < EPOCH.getTime() ? EPOCH : date;
}

/** A change to a tag set: `tags` replaces it; `add_tags` then `remove_tags` edit it. */
export interface TagChange {
  tags?: string[] | undefined;
  add_tags?: string[] | undefined;
  remove_tags?: string[] | undefined;
}

export type NextTags = { ok: true; tags: string[] } | { ok: false; path: string; message: string };

/**
 * The tags after `change` (each once, in first-seen order), or why it is refused: `tags` with
 * `add_tags`/`remove_tags`, or a result over `max` tags.
 */
export function nextTags(current: readonly string[], change: TagChange, max: number): NextTags {
  if (change.tags !== undefined && (change.add_tags !== undefined || change.remove_tags !== undefined)) {
    return { ok: false, path: 'tags', message: 'cannot be combined with add_tags or remove_tags' };
  }
  const removed = new Set(change.remove_tags ?? []);
  const tags = [...new Set([...(change.tags ?? current), ...(change.add_tags ?? [])])].filter((tag) => !removed.has(tag));
  if (tags.length > max)
    return {
      ok: false,
      path: change.add_tags ? 'add_tags' : 'tags',
      message: `would leave ${tags.length} tags; at most ${max} are allowed`,
    };
  return { ok: true, tags };
}
