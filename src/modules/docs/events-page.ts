import { toJsonSchema } from '@valibot/to-json-schema';
import type { GenericSchema } from 'valibot';
import { ALL_EVENTS, EVENT_CATALOG, EVENT_CATEGORIES } from '../events/events.schemas.ts';
import { escapeHtml as escape } from '../../html-escape.ts';

type JsonSchema = {
  type?: string | string[];
  format?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
};


/** Escaped text with `code` spans. */
const prose = (text: string) => escape(text).replace(/`([^`]+)`/g, '<code>$1</code>');

/** A one-line type of a JSON Schema: `string (date-time)`, `"a" | "b"`, `object`, `… or null`. */
function typeOf(schema: JsonSchema): string {
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(' or ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  if (schema.type === 'array') return `array of ${schema.items ? typeOf(schema.items) : 'any'}`;
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? 'any');
  return schema.format ? `${type} (${schema.format})` : type;
}

/** Nested list of an object's fields, their types, and the fields of nested objects. */
function fieldList(schema: JsonSchema): string {
  const nested = (s: JsonSchema): JsonSchema | undefined =>
    s.properties ? s : s.type === 'array' && s.items?.properties ? s.items : s.anyOf?.find((a) => a.properties);
  const items = Object.entries(schema.properties ?? {}).map(([name, field]) => {
    const inner = nested(field);
    return `<li><code>${escape(name)}</code> ${escape(typeOf(field))}${inner ? fieldList(inner) : ''}</li>`;
  });
  return `<ul>${items.join('')}</ul>`;
}

function dataSchema(schema: GenericSchema): JsonSchema {
  return toJsonSchema(schema, { target: 'draft-2020-12', typeMode: 'output', errorMode: 'ignore' }) as JsonSchema;
}

/** The body of /docs/events: the envelope, how to subscribe and every event type's data. */
export function eventsPageBody(): string {
  const sections = EVENT_CATEGORIES.map((category) => {
    const events = EVENT_CATALOG.filter((event) => event.category === category);
    const entries = events.map(
      (event) => `<h3 id="${event.type}"><code>${event.type}</code></h3>
<p>${prose(event.description)}</p><p><code>data</code>:</p>${fieldList(dataSchema(event.data))}`,
    );
    return `<h2>${category[0]!.toUpperCase()}${category.slice(1)} events</h2>${entries.join('\n')}`;
  });
  const index = EVENT_CATALOG.map(
    (event) => `<tr><td><a href="#${event.type}"><code>${event.type}</code></a></td><td>${prose(event.description)}</td></tr>`,
  ).join('');
  return `<p><a href="/docs">API reference</a></p>
<h1>Webhook events</h1>
<p>Register an endpoint with <code>POST /api/v1/webhooks</code> and list the event types it wants in <code>events</code>;
<code>${ALL_EVENTS}</code> subscribes to every type, including types added later. Herald POSTs each event as JSON:</p>
<pre><code>{"id": "&lt;event id&gt;", "object": "event", "type": "contact.created",
 "created_at": "2026-11-21T09:30:00.000Z", "api_version": "1.0.0", "data": { … }}</code></pre>
<p>Every delivery is signed: <code>Herald-Signature: t=&lt;unix seconds&gt;,v1=&lt;hex HMAC-SHA256 of "&lt;t&gt;.&lt;raw body&gt;"&gt;</code>,
keyed with the whole signing secret (<code>whsec_…</code>), which <code>stripe.webhooks.constructEvent</code> verifies; the
Standard Webhooks headers <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> come from the
same secret. <code>Herald-Event-Id</code>, <code>Herald-Delivery-Id</code> and <code>Herald-Event-Type</code> name the event.
Answer 2xx only once the event is stored; anything else is retried, and a replay keeps the delivery and event ids, so
process each event id once.</p>
<table><tr><th>type</th><th>when</th></tr>${index}</table>
${sections.join('\n')}`;
}
