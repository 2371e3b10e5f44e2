import { describe, expect, it } from 'vitest';
import { findShapeProblem } from '../../src/http/json-shape.ts';

const BOUNDS = { depth: 3, keys: 2, items: 3, values: 10 };

describe('findShapeProblem', () => {
  it.each([
    ['{}', null],
    ['[[[]]]', null],
    ['[[[[]]]]', 'JSON_TOO_DEEP'],
    ['{"a":1,"b":2}', null],
    ['{"a":1,"b":2,"c":3}', 'JSON_TOO_MANY_KEYS'],
    ['[1,2,3]', null],
    ['[1,2,3,4]', 'JSON_TOO_MANY_ITEMS'],
    ['[[1,2,3],[1,2,3],[1,2,3]]', 'JSON_TOO_MANY_VALUES'],
    ['[[1,2],[3]]', null],
  ])('%s → %s', (text, reason) => {
    expect(findShapeProblem(text, BOUNDS)?.reason ?? null).toBe(reason);
  });

  it('ignores brackets and commas inside strings, escaped quotes included', () => {
    expect(findShapeProblem('{"a":"[[[[,,,,{{{{","b":"\\"[[[[,,,"}', BOUNDS)).toBeNull();
    expect(findShapeProblem('["\\\\",[[[]]]]', BOUNDS)?.reason).toBe('JSON_TOO_DEEP');
    expect(findShapeProblem('["\\\\\\"[[[[",1]', BOUNDS)).toBeNull();
  });

  it('counts each container on its own: a closed array frees its depth and its items', () => {
    expect(findShapeProblem('[[1,2,3],[[1]]]', { ...BOUNDS, values: 100 })).toBeNull();
  });

  it('stops at the first excess of a 100,000-level array without recursion', () => {
    const problem = findShapeProblem('['.repeat(100_000) + ']'.repeat(100_000), { depth: 32, keys: 1000, items: 1000, values: 100_000 });
    expect(problem).toEqual({ reason: 'JSON_TOO_DEEP', limit: 32, message: expect.stringContaining('deeper than 32 levels') });
  });

  it('leaves syntax to the parser: an unterminated string is not a shape problem', () => {
    expect(findShapeProblem('{"a":"[[[[', BOUNDS)).toBeNull();
  });
});
