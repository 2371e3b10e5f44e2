import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { describe, expect, it } from 'vitest';
import {
  ALL_EVENTS,
  endpointGets,
  endpointReceives,
  EVENT_CATALOG,
  EVENT_CATEGORIES,
  EVENT_TYPES,
  isEventType,
} from '../../src/modules/events/events.schemas.ts';
import { isSubscribed, recordEvent } from '../../src/modules/events/events.fns.ts';

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
        'domain.tracking_verified',
        'domain.tracking_attention',
        'domain.dmarc_report_received',
        'email.sent',
        'email.delivered',
        'email.deferred',
        'email.bounced',
        'email.complained',
        'email.failed',
        'email.opened',
        'email.clicked',
        'email.received',
        'automation.run.completed',
        'automation.run.failed',
        'automation.webhook',
        'workspace.reputation_paused',
        'workspace.reputation_resumed',
        'webhook.test',
      ].sort(),
    );
    expect(EVENT_CATALOG.map((e) => e.type)).toEqual([...EVENT_TYPES]);
    for (const event of EVENT_CATALOG) {
      expect(event.type).toMatch(/^[a-z]+(\.[a-z_]+)+$/);
      expect(event.type.startsWith(`${event.category}.`) || event.category === 'compliance', event.type).toBe(true);
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

  it('has an automation category with the run endings and the webhook step', () => {
    expect(EVENT_CATEGORIES).toContain('automation');
    expect(EVENT_CATALOG.filter((e) => e.category === 'automation').map((e) => e.type)).toEqual([
      'automation.run.completed',
      'automation.run.failed',
      'automation.webhook',
    ]);
  });

  it('delivers webhook.test only to the endpoint it names, subscribed or not', () => {
    const event = { type: 'webhook.test', addressedTo: 'ep1' };
    expect(endpointGets({ id: 'ep1', events: ['contact.created'] }, event)).toBe(true);
    expect(endpointGets({ id: 'ep2', events: [ALL_EVENTS] }, event)).toBe(false);
    expect(isSubscribed(new Map(), 'org', 'webhook.test')).toBe(true);
  });

  it('delivers automation.webhook only to the endpoint it names, subscribed or not', () => {
    const event = { type: 'automation.webhook', addressedTo: 'ep1' };
    expect(endpointGets({ id: 'ep1', events: ['contact.created'] }, event)).toBe(true);
    expect(endpointGets({ id: 'ep1', events: ['automation.webhook'] }, event)).toBe(true);
    expect(endpointGets({ id: 'ep2', events: [ALL_EVENTS] }, event)).toBe(false);
    expect(endpointGets({ id: 'ep2', events: ['automation.webhook'] }, event)).toBe(false);
    expect(endpointGets({ id: 'ep1', events: ['automation.webhook'] }, { type: 'automation.webhook', addressedTo: null })).toBe(false);
    // Every other type goes by subscription, whatever its data names.
    expect(endpointGets({ id: 'ep1', events: ['contact.created'] }, { type: 'automation.run.completed', addressedTo: 'ep1' })).toBe(false);
    expect(endpointGets({ id: 'ep2', events: [ALL_EVENTS] }, { type: 'automation.run.failed', addressedTo: null })).toBe(true);
    expect(endpointGets({ id: 'ep2', events: ['automation.run.completed'] }, { type: 'automation.run.completed', addressedTo: null })).toBe(
      true,
    );
    // A writer that leaves out events nobody subscribes to still writes automation.webhook.
    expect(isSubscribed(new Map(), 'org', 'automation.webhook')).toBe(true);
    expect(isSubscribed(new Map(), 'org', 'automation.run.completed')).toBe(false);
  });
});
