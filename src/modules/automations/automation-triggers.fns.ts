/**
 * The pure part of trigger firing: which tags a change added, which segments a contact joins
 * by it, and the active triggers as a set to ask.
 */

/** A contact created or whose tags changed: its tags before the change (none for a new contact) and after. */
export interface ContactChange {
  contactId: string;
  created: boolean;
  tagsBefore: readonly string[];
  tagsAfter: readonly string[];
}

/** The tags the change added (exact match, case included, as segments and contacts compare them). */
export function addedTags(change: Pick<ContactChange, 'tagsBefore' | 'tagsAfter'>): string[] {
  const before = new Set(change.tagsBefore);
  return [...new Set(change.tagsAfter)].filter((tag) => !before.has(tag));
}

/**
 * Whether the change makes the contact a member of the segment it was not: an `all` segment
 * takes every new contact; a `tag` segment a contact that carries one of its tags now and
 * carried none before. A static segment's members change only through membership (and imports).
 */
export function joinsSegment(segment: { type: string; tags: readonly string[] }, change: ContactChange): boolean {
  if (segment.type === 'all') return change.created;
  if (segment.type !== 'tag') return false;
  const matches = (tags: readonly string[]) => tags.some((tag) => segment.tags.includes(tag));
  return matches(change.tagsAfter) && !matches(change.tagsBefore);
}

/** The trigger keys an opened or clicked email matches: any email (null), its template's and its broadcast's. */
export function engagementKeys(email: { template_id: string | null; broadcast_id: string | null }): (string | null)[] {
  return [
    null,
    ...(email.template_id ? [`template:${email.template_id}`] : []),
    ...(email.broadcast_id ? [`broadcast:${email.broadcast_id}`] : []),
  ];
}

/** The (type, key) pairs active automations listen on, to ask before enrolling anyone. */
export function activeTriggerSet(rows: readonly { type: string; key: string | null }[]) {
  const keysByType = new Map<string, Set<string | null>>();
  for (const row of rows) {
    const keys = keysByType.get(row.type) ?? new Set<string | null>();
    keys.add(row.key);
    keysByType.set(row.type, keys);
  }
  return {
    get empty(): boolean {
      return keysByType.size === 0;
    },
    has(type: string, key: string | null): boolean {
      return keysByType.get(type)?.has(key) ?? false;
    },
    /** The keys of a type that are not null. */
    keys(type: string): string[] {
      return [...(keysByType.get(type) ?? [])].filter((key): key is string => key !== null);
    },
  };
}

/** Contact ids grouped by key, in first-seen order, each id once per key. */
export function groupByKey<K>(pairs: Iterable<readonly [K, string]>): Map<K, string[]> {
  const groups = new Map<K, Set<string>>();
  for (const [key, contactId] of pairs) {
    const ids = groups.get(key) ?? new Set<string>();
    ids.add(contactId);
    groups.set(key, ids);
  }
  return new Map([...groups].map(([key, ids]) => [key, [...ids]]));
}
