import { describe, expect, it } from 'vitest';
import { jsonTextEnvelope } from '../../src/http/envelope.ts';

describe('jsonTextEnvelope', () => {
  it.each([
    ['[]', '{"request_id":"req_1"}'],
    ['[{"email":"a@example.com","firstName":"Zoë","tags":["🎉","日本"]}]', '{"request_id":"req_2","pagination":{"next_cursor":null}}'],
    ['[{"company":"\\"quoted\\" \\\\ back"}]', '{"request_id":"réq"}'],
  ])('writes the envelope of %s byte for byte as the concatenated text would be', (data, meta) => {
    const expected = `{"ok":true,"data":${data},"meta":${meta}}`;
    const bytes = jsonTextEnvelope(data, meta);
    expect(bytes.equals(Buffer.from(expected))).toBe(true);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual({ ok: true, data: JSON.parse(data), meta: JSON.parse(meta) });
  });
});
