import { describe, expect, it } from 'vitest';
import { rememberProvenDomains } from '../../src/smtp/inbound-server.ts';

/** A lookup over a set of proven domains that counts its calls, and a clock the test moves. */
function setup(proven: Set<string>) {
  let now = 1_000;
  const asked: string[] = [];
  const check = rememberProvenDomains(
    (domain) => {
      asked.push(domain);
      return Promise.resolve(proven.has(domain));
    },
    1_000,
    () => now,
  );
  return { check, asked, advance: (ms: number) => (now += ms) };
}

describe('the RCPT check remembers proven domains (rememberProvenDomains)', () => {
  it('asks once per domain within the time a yes is kept, and again after it', async () => {
    const { check, asked, advance } = setup(new Set(['acme.example']));
    expect(await check('acme.example')).toBe(true);
    advance(999);
    expect(await check('acme.example')).toBe(true);
    expect(asked).toEqual(['acme.example']);
    advance(1);
    expect(await check('acme.example')).toBe(true);
    expect(asked).toEqual(['acme.example', 'acme.example']);
  });

  it('never keeps a no: a domain proven a moment later receives at once', async () => {
    const proven = new Set<string>();
    const { check, asked } = setup(proven);
    expect(await check('new.example')).toBe(false);
    proven.add('new.example');
    expect(await check('new.example')).toBe(true);
    expect(asked).toEqual(['new.example', 'new.example']);
  });

  it('refuses a domain removed since, once its yes has lapsed', async () => {
    const proven = new Set(['gone.example']);
    const { check, advance } = setup(proven);
    expect(await check('gone.example')).toBe(true);
    proven.delete('gone.example');
    expect(await check('gone.example')).toBe(true);
    advance(1_000);
    expect(await check('gone.example')).toBe(false);
  });

  it('does not keep a failed lookup (the caller answers 451)', async () => {
    let fail = true;
    const check = rememberProvenDomains((domain) => (fail ? Promise.reject(new Error('down')) : Promise.resolve(domain === 'a.example')));
    await expect(check('a.example')).rejects.toThrow('down');
    fail = false;
    expect(await check('a.example')).toBe(true);
  });
});
