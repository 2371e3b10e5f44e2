import { describe, expect, it } from 'vitest';
import { inBurst } from '../../src/modules/broadcasts/tracking-counter.ts';

const hit = (id: string, kind: 'open' | 'click', url: string | null, at: number) => ({ id, kind, url, at_ms: at });

describe('tracking bursts', () => {
  it('flags clicks on different links within a second, not the same link or clicks further apart', () => {
    const a = hit('a', 'click', 'https://x/a', 1_000);
    const b = hit('b', 'click', 'https://x/b', 1_900);
    const again = hit('c', 'click', 'https://x/a', 1_500);
    const later = hit('d', 'click', 'https://x/b', 2_001);
    expect(inBurst(a, [a, b])).toBe(true);
    expect(inBurst(a, [a, again])).toBe(false);
    expect(inBurst(a, [a, later])).toBe(false);
  });

  it('flags an open fetched with two different links in that second, not with one', () => {
    const open = hit('o', 'open', null, 1_000);
    expect(inBurst(open, [open, hit('a', 'click', 'https://x/a', 1_200)])).toBe(false);
    expect(inBurst(open, [open, hit('a', 'click', 'https://x/a', 1_200), hit('b', 'click', 'https://x/b', 800)])).toBe(true);
    expect(inBurst(open, [open, hit('a', 'click', 'https://x/a', 1_200), hit('b', 'click', 'https://x/b', 2_500)])).toBe(false);
  });
});
