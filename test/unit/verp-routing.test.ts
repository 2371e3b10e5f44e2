import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emailIdFromVerp } from '../../src/modules/inbound/report-classifier.ts';
import { routeOf } from '../../src/modules/inbound/routing.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';

const ID = '0123456789abcdef01234567';
const BOUNCE_DOMAIN = 'bounces.herald.test';
const verp = createVerpSigner(randomBytes(32));

describe('signed VERP return paths', () => {
  it('signs the email id and the bounce host, and verifies only what it signed', () => {
    const address = verp.address(ID, 'Bounces.Shop.Example');
    expect(address).toMatch(new RegExp(`^bounce\\+${ID}-[0-9a-f]{20}@bounces\\.shop\\.example$`));
    expect(address.split('@')[0]!.length).toBeLessThanOrEqual(64);
    expect(verp.check(address, BOUNCE_DOMAIN)).toEqual({ kind: 'verified', verp: { emailId: ID, host: 'bounces.shop.example' } });
    // Some MTAs fold the case of the local part.
    expect(verp.check(address.toUpperCase(), BOUNCE_DOMAIN)).toEqual({
      kind: 'verified',
      verp: { emailId: ID, host: 'bounces.shop.example' },
    });
  });

  it('refuses the unsigned legacy form, another email id, another host, another key and a flipped tag', () => {
    const address = verp.address(ID, 'bounces.shop.example');
    const tag = /-([0-9a-f]{20})@/.exec(address)![1]!;
    const other = '0123456789abcdef01234568';
    expect(verp.check(`bounce+${ID}@bounces.shop.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    expect(verp.check(`bounce+${ID}@${BOUNCE_DOMAIN}`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    expect(verp.check(`bounce+${other}-${tag}@bounces.shop.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    expect(verp.check(`bounce+${ID}-${tag}@bounces.other.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    expect(createVerpSigner(randomBytes(32)).check(address, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    const flipped = tag.slice(0, -1) + (tag.endsWith('0') ? '1' : '0');
    expect(verp.check(`bounce+${ID}-${flipped}@bounces.shop.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
    expect(verp.check(`bounce+${ID}-${tag}x@bounces.shop.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'forged' });
  });

  it('leaves ordinary addresses alone', () => {
    expect(verp.check('support@shop.example', BOUNCE_DOMAIN)).toEqual({ kind: 'other' });
    expect(verp.check(`bounce+${ID}@shop.example`, BOUNCE_DOMAIN)).toEqual({ kind: 'other' });
  });

  it('routes a verified address to its email, an ordinary one by domain, and refuses anything else on a bounce host', () => {
    expect(routeOf(verp.address(ID, 'bounces.shop.example'), BOUNCE_DOMAIN, verp)).toEqual({
      kind: 'verp',
      emailId: ID,
      host: 'bounces.shop.example',
    });
    expect(routeOf('Support@Shop.Example', BOUNCE_DOMAIN, verp)).toEqual({ kind: 'domain', domain: 'shop.example' });
    expect(routeOf(`bounce+${ID}@bounces.shop.example`, BOUNCE_DOMAIN, verp)).toEqual({ kind: 'refused' });
    expect(routeOf('postmaster@bounces.shop.example', BOUNCE_DOMAIN, verp)).toEqual({ kind: 'refused' });
    expect(routeOf(`anything@${BOUNCE_DOMAIN}`, BOUNCE_DOMAIN, verp)).toEqual({ kind: 'refused' });
    // Without HERALD_ENCRYPTION_KEY nothing was signed, so no bounce address is trusted.
    expect(routeOf(verp.address(ID, 'bounces.shop.example'), BOUNCE_DOMAIN, null)).toEqual({ kind: 'refused' });
  });

  it('lets the classifier read the id a bounce address claims (a claim only; routing verifies)', () => {
    expect(emailIdFromVerp([`<${verp.address(ID, 'bounces.shop.example')}>`], BOUNCE_DOMAIN)).toBe(ID);
    expect(emailIdFromVerp([`bounce+${ID}@bounces.shop.example`], BOUNCE_DOMAIN)).toBe(ID);
    expect(emailIdFromVerp([`bounce+${ID}@elsewhere.example`], BOUNCE_DOMAIN)).toBeNull();
  });
});
