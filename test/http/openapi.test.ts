import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimitOf } from '../../src/http/body-limits.ts';
import { openApiPath } from '../../src/http/openapi.ts';
import { isWrite } from '../../src/http/route.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';

interface Operation {
  operationId: string;
  security: Record<string, string[]>[];
  parameters: { name: string; in: string; required: boolean }[];
  requestBody?: unknown;
  'x-herald-body-limit-bytes'?: number;
  responses: Record<string, unknown>;
}

describe('GET /api/v1/openapi.json', () => {
  let h: ApiHarness;
  let document: { openapi: string; paths: Record<string, Record<string, Operation>> };

  beforeAll(async () => {
    h = await startApiHarness();
    const response = await fetch(`${h.api.url}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    document = (await response.json()) as typeof document;
  });
  afterAll(() => h.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document);
    expect(result.errors, JSON.stringify(result.errors, null, 2)).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('holds every mounted route with its scope, parameters, body and error responses', () => {
    const documented = Object.entries(document.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(h.api.routes.map((r) => `${r.method} ${openApiPath(r.path)}`).sort());
    for (const route of h.api.routes) {
      const op = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      expect(op.operationId).toBe(route.operationId);
      expect(op.security).toEqual([{ bearerAuth: [route.scope] }]);
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining([String(route.response.status), '401', '403', '429', '500']));
      if (route.body) expect(op.requestBody, route.operationId).toBeDefined();
      expect(op['x-herald-body-limit-bytes'], route.operationId).toBe(bodyLimitOf(route));
      if (isWrite(route)) expect(Object.keys(op.responses), route.operationId).toContain('413');
      const idempotency = op.parameters.find((p) => p.name === 'Idempotency-Key');
      if (isWrite(route)) expect(idempotency).toMatchObject({ in: 'header', required: route.idempotency !== 'optional' });
      else expect(idempotency).toBeUndefined();
      for (const name of route.path.match(/:([A-Za-z0-9_]+)/g) ?? []) {
        expect(op.parameters).toContainEqual(expect.objectContaining({ name: name.slice(1), in: 'path', required: true }));
      }
    }
  });

  it('describes request fields from the same valibot schemas the API validates with', () => {
    const create = document.paths['/api/v1/contacts']!.post! as Operation & {
      requestBody: {
        content: {
          'application/json': { schema: { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean } };
        };
      };
    };
    const schema = create.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(['email']);
    expect(Object.keys(schema.properties).sort()).toEqual(['company', 'custom_fields', 'email', 'first_name', 'last_name', 'tags']);
    expect(schema.additionalProperties).toBe(false);
    const list = document.paths['/api/v1/contacts']!.get!;
    expect(list.parameters).toContainEqual(expect.objectContaining({ name: 'limit', in: 'query', required: false }));
  });

  it('serves the reference page at /docs from this server', async () => {
    const html = await (await fetch(`${h.api.url}/docs`)).text();
    expect(html).toContain('/api/v1/openapi.json');
    expect(html).not.toMatch(/https?:\/\/(?!herald)/);
  });
});
