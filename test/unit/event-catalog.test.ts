import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { describe, expect, it } from 'vitest';
import { ALL_EVENTS, endpointReceives, EVENT_CATALOG, EVENT_TYPES, isEventType } from '../../src/modules/events/events.schemas.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';

const ROOT = join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Never called: tsc (part of the test command) fails if recordEvent accepted an unknown type. */
function _recordEventRefusesUnknownTypes(em: EntityManager): void {
  // @ts-expect-error 'contact.renamed' is not in the event catalog
  recordEvent(em, 'org', 'contact.renamed', {});
  recordEvent(em, 'org', 'contact.created', {});
}

describe('event catalog', () => {
  it('lists every event type Herald emits, each with a category, description and data shape', () => {
    expect([...EVENT_TYPES].sort()).toEqual(
      [
        'contact.created',
        'contact.updated',
        'contact.deleted',
        'contact.unsubscribed',
        'contact.suppressed',
        'contact.bounced',
        'contact.complained',
        'broadcast.created',
        'broadcast.scheduled',
        'broadcast.sending',
        'broadcast.sent',
        'broadcast.cancelled',
        'broadcast.failed',
        'domain.verified',
        'domain.attention',
        'email.sent',
        'email.delivered',
        'email.deferred',
        'email.bounced',
        'email.complained',
        'email.failed',
        'email.received',
      ].sort(),
    );
    expect(EVENT_CATALOG.map((e) => e.type)).toEqual([...EVENT_TYPES]);
    for (const event of EVENT_CATALOG) {
      expect(event.type).toMatch(/^[a-z]+\.[a-z_]+$/);
      expect(event.description.length, event.type).toBeGreaterThan(10);
      expect(event.data.type, event.type).toBe('object');
    }
  });

  it('every recordEvent call in the code names a catalog type', () => {
    const calls: string[] = [];
    for (const file of ['src', 'activities', 'workflows'].flatMap(sourceFiles)) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/recordEvent\(\s*\w+\s*,\s*[\w.]+\s*,\s*'([^']+)'/g)) {
        calls.push(`${relative(ROOT, file)}: ${match[1]}`);
        expect(isEventType(match[1]!), `${relative(ROOT, file)} records ${match[1]}`).toBe(true);
      }
    }
    expect(calls.length).toBeGreaterThan(0);
  });

  it('matches subscriptions: exact types, or * for everything', () => {
    expect(endpointReceives(['contact.created'], 'contact.created')).toBe(true);
    expect(endpointReceives(['contact.created'], 'contact.updated')).toBe(false);
    expect(endpointReceives([ALL_EVENTS], 'email.received')).toBe(true);
    expect(isEventType('*')).toBe(false);
    expect(isEventType('contact.renamed')).toBe(false);
  });
});
