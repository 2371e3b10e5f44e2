import { toJsonSchema } from '@valibot/to-json-schema';
import type { GenericSchema } from 'valibot';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { SCOPE_CATALOG } from '../modules/auth/scopes.ts';
import { EVENT_CATALOG, eventEnvelopeSchema } from '../modules/events/events.schemas.ts';
import { bodyLimitOf, formatBytes } from './body-limits.ts';
import { API_PREFIX } from './constants.ts';
import { JSON_SCHEMA_OVERRIDES } from './schemas.ts';
import { isWrite, type AnyRoute, type Schema } from './route.ts';

type JsonSchema = Record<string, unknown>;

const COMMON_ERRORS: ErrorCode[] = ['invalid_api_key', 'missing_scope', 'rate_limited', 'internal_error'];

function jsonSchema(schema: Schema, typeMode: 'input' | 'output'): JsonSchema {
  const converted = toJsonSchema(schema as GenericSchema, {
    target: 'draft-2020-12',
    typeMode,
    errorMode: 'ignore',
    overrideSchema: ({ valibotSchema }) => JSON_SCHEMA_OVERRIDES.get(valibotSchema),
  }) as JsonSchema;
  delete converted.$schema;
  return converted;
}

/** `/contacts/:id` → `/api/v1/contacts/{id}` */
export function openApiPath(path: string): string {
  return API_PREFIX + path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parameters(route: AnyRoute): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [location, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const object = jsonSchema(schema, 'input');
    const required = new Set((object.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries((object.properties as Record<string, JsonSchema> | undefined) ?? {})) {
      out.push({ name, in: location, required: location === 'path' || required.has(name), schema: property });
    }
  }
  if (isWrite(route)) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: route.idempotency !== 'optional',
      description: 'Makes the write safe to retry: the same key and request replay the stored response for 24 h.',
      schema: { type: 'string', minLength: 8, maxLength: 128 },
    });
  }
  return out;
}

function errorResponses(route: AnyRoute): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  const codes = new Set<ErrorCode>([...COMMON_ERRORS, ...(route.errors ?? [])]);
  if (route.params || route.query || route.body || isWrite(route)) codes.add('invalid_request');
  if (isWrite(route)) codes.add('idempotency_conflict').add('conflict').add('payload_too_large');
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, list]) => [
        String(status),
        {
          description: `Error: ${list.join(', ')}`,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
        },
      ]),
  );
}

const RATE_LIMIT_HEADERS: JsonSchema = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimitLimit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimitRemaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimitReset' },
};

/** The success response: the JSON envelope around the route's schema, or raw bytes. */
function successResponse(route: AnyRoute): JsonSchema {
  const response = route.response;
  if (response.binary) {
    return {
      description: response.description,
      headers: {
        ...RATE_LIMIT_HEADERS,
        ...Object.fromEntries(
          Object.entries(response.binary.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
        ),
      },
      content: { [response.binary.contentType]: { schema: { type: 'string', format: 'binary' } } },
    };
  }
  const data = jsonSchema(response.schema, 'output');
  return {
    description: response.description,
    headers: RATE_LIMIT_HEADERS,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['ok', 'data', 'meta'],
          properties: {
            ok: { const: true },
            data: response.list ? { type: 'array', items: data } : data,
            meta: { $ref: response.list ? '#/components/schemas/ListMeta' : '#/components/schemas/Meta' },
          },
        },
      },
    },
  };
}

function operation(route: AnyRoute): JsonSchema {
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security: [{ bearerAuth: [route.scope] }],
    'x-required-scope': route.scope,
    'x-herald-body-limit-bytes': bodyLimitOf(route),
    ...(route.extension ? { 'x-herald-extension': true } : {}),
    parameters: parameters(route),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            description: `At most ${bodyLimitOf(route)} bytes (${formatBytes(bodyLimitOf(route))}), counted as they arrive: a larger body is answered 413 payload_too_large, details.reason REQUEST_TOO_LARGE. JSON bounds (400): nesting 32 levels, 1,000 keys per object, 1,000 items per array, 100,000 values.`,
            content: { 'application/json': { schema: jsonSchema(route.body, 'input') } },
          },
        }
      : {}),
    responses: {
      [String(route.response.status)]: successResponse(route),
      ...errorResponses(route),
    },
  };
}

const RATE_LIMIT_META: JsonSchema = {
  type: 'object',
  properties: {
    limit: { type: 'integer', description: 'Bucket capacity (the burst).' },
    remaining: { type: ['integer', 'null'] },
    reset: { type: ['integer', 'null'], description: 'Seconds until the bucket is full again.' },
    requests_per_minute: { type: 'integer' },
    burst: { type: 'integer' },
    degraded: { type: 'boolean', description: 'Present when the limiter was unavailable and the request passed unmetered.' },
  },
};

const DELIVERY_HEADERS: readonly [string, string][] = [
  [
    'Herald-Signature',
    '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` keyed with the whole signing secret; `stripe.webhooks.constructEvent(body, header, secret)` verifies it.',
  ],
  ['webhook-id', 'Standard Webhooks: the delivery id, the same on every retry and replay.'],
  ['webhook-timestamp', 'Standard Webhooks: unix seconds of this attempt.'],
  ['webhook-signature', 'Standard Webhooks: `v1,<base64 signature>` from the same secret.'],
  ['Herald-Event-Id', 'The event id (also `id` in the body); store it to process each event once.'],
  ['Herald-Delivery-Id', 'The delivery id (one per event and endpoint).'],
  ['Herald-Event-Type', 'The event type (also `type` in the body).'],
];

/** The event catalog as OpenAPI 3.1 `webhooks`: what Herald POSTs to a subscribed endpoint. */
function webhooks(): Record<string, JsonSchema> {
  return Object.fromEntries(
    EVENT_CATALOG.map((event) => [
      event.type,
      {
        post: {
          summary: event.description.replaceAll('`', ''),
          description: `${event.description} Category: ${event.category}. The whole catalog: /docs/events.`,
          parameters: DELIVERY_HEADERS.map(([name, description]) => ({
            name,
            in: 'header',
            required: true,
            description,
            schema: { type: 'string' },
          })),
          requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(eventEnvelopeSchema(event), 'output') } } },
          responses: {
            '2XX': {
              description: 'Accepted: answer only after durable processing. Anything else is retried; 410 Gone disables the endpoint.',
            },
          },
        },
      },
    ]),
  );
}

/** The OpenAPI 3.1 document of every mounted route, generated from the same valibot schemas. */
export function buildOpenApi(routes: readonly AnyRoute[], options: { publicUrl: string }): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald API',
      version: '1.0.0',
      description:
        "Herald's public REST API. Authenticate with `Authorization: Bearer <key>`; every operation needs the scope shown. " +
        'Writes take an `Idempotency-Key`. Errors are described at /docs/api/errors; webhook event types at /docs/events.',
    },
    servers: [{ url: options.publicUrl }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    webhooks: webhooks(),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: `API keys hrld_live_… / hrld_test_…. Scopes: ${SCOPE_CATALOG.filter((s) => s.launch === 'public')
            .map((s) => s.id)
            .join(', ')}.`,
        },
      },
      headers: {
        RateLimitLimit: { description: 'Bucket capacity (burst) of the key.', schema: { type: 'integer' } },
        RateLimitRemaining: { description: 'Requests left right now.', schema: { type: 'integer' } },
        RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
      },
      schemas: {
        Meta: {
          type: 'object',
          required: ['request_id'],
          properties: { request_id: { type: 'string' }, rate_limit: RATE_LIMIT_META },
        },
        ListMeta: {
          type: 'object',
          required: ['request_id', 'pagination'],
          properties: {
            request_id: { type: 'string' },
            rate_limit: RATE_LIMIT_META,
            pagination: {
              type: 'object',
              required: ['limit', 'has_more', 'next_cursor'],
              properties: {
                limit: { type: 'integer', minimum: 1, maximum: 100 },
                has_more: { type: 'boolean' },
                next_cursor: { type: ['string', 'null'] },
              },
            },
          },
        },
        ErrorEnvelope: {
          type: 'object',
          required: ['ok', 'error', 'meta'],
          properties: {
            ok: { const: false },
            error: {
              type: 'object',
              required: ['code', 'message', 'docs_url'],
              properties: {
                code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
                message: { type: 'string' },
                docs_url: { type: 'string', format: 'uri' },
                details: { type: 'object' },
              },
            },
            meta: { type: 'object', required: ['request_id'], properties: { request_id: { type: 'string' } } },
          },
        },
      },
    },
  };
}
