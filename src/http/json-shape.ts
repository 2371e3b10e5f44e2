import type { JsonBounds } from './body-limits.ts';

export type ShapeReason = 'JSON_TOO_DEEP' | 'JSON_TOO_MANY_KEYS' | 'JSON_TOO_MANY_ITEMS' | 'JSON_TOO_MANY_VALUES';

export interface ShapeProblem {
  reason: ShapeReason;
  message: string;
  limit: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Index of the quote closing the string opened at `start` (native search; base64 is skipped whole). */
function closingQuote(text: string, start: number): number {
  let at = start;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return at;
  }
}

function problemOf(reason: ShapeReason, limit: number): ShapeProblem {
  const what = {
    JSON_TOO_DEEP: `JSON nested deeper than ${limit} levels`,
    JSON_TOO_MANY_KEYS: `a JSON object with more than ${limit} keys`,
    JSON_TOO_MANY_ITEMS: `a JSON array with more than ${limit} items`,
    JSON_TOO_MANY_VALUES: `more than ${limit} JSON values`,
  }[reason];
  return { reason, limit, message: `The request body holds ${what}; no operation accepts that.` };
}

/**
 * Checks the shape of JSON text against the bounds in one pass without parsing it (nesting
 * depth, keys of each object, items of each array, values in all), stopping at the first excess. Syntax is
 * not checked here: the parser that runs afterwards reports it. Iterative, so no input can
 * exhaust the stack.
 */
export function findShapeProblem(text: string, bounds: JsonBounds): ShapeProblem | null {
  const separators: number[] = [];
  const isObject: boolean[] = [];
  let values = 1;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (separators.length >= bounds.depth) return problemOf('JSON_TOO_DEEP', bounds.depth);
      if ((values += 1) > bounds.values) return problemOf('JSON_TOO_MANY_VALUES', bounds.values);
      separators.push(0);
      isObject.push(c === OPEN_OBJECT);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      separators.pop();
      isObject.pop();
    } else if (c === COMMA && separators.length > 0) {
      if ((values += 1) > bounds.values) return problemOf('JSON_TOO_MANY_VALUES', bounds.values);
      const top = separators.length - 1;
      const members = (separators[top] = (separators[top] ?? 0) + 1) + 1;
      const object = isObject[top] === true;
      const limit = object ? bounds.keys : bounds.items;
      if (members > limit) return problemOf(object ? 'JSON_TOO_MANY_KEYS' : 'JSON_TOO_MANY_ITEMS', limit);
    }
  }
  return null;
}
