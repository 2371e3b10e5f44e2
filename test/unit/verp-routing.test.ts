import { describe, expect, it } from 'vitest';
import { emailIdFromVerp } from '../../src/modules/inbound/report-classifier.ts';
import { bounceHostMatches, verpEmailId } from '../../src/modules/inbound/routing.ts';

const ID = '0123456789abcdef01234567';

describe('VERP bounce addresses', () => {
  it('reads the email id on BOUNCE_DOMAIN (mail sent before alignment) and on a bounces. host', () => {
    expect(verpEmailId(`bounce+${ID}@Bounces.Herald.test`, 'bounces.herald.test')).toEqual({ emailId: ID, host: 'bounces.herald.test' });
    expect(verpEmailId(`bounce+${ID}@bounces.shop.example`, 'bounces.herald.test')).toEqual({ emailId: ID, host: 'bounces.shop.example' });
    expect(verpEmailId(`bounce+${ID}@shop.example`, 'bounces.herald.test')).toBeNull();
    expect(verpEmailId('bounce+nothex@bounces.shop.example', 'bounces.herald.test')).toBeNull();
    expect(emailIdFromVerp([`<bounce+${ID}@bounces.shop.example>`], 'bounces.herald.test')).toBe(ID);
    expect(emailIdFromVerp([`bounce+${ID}@elsewhere.example`], 'bounces.herald.test')).toBeNull();
  });

  it('lets a bounces. host name only emails of its own sending domain', () => {
    expect(bounceHostMatches('bounces.shop.example', 'bounces.herald.test', 'Shop.Example')).toBe(true);
    expect(bounceHostMatches('bounces.herald.test', 'bounces.herald.test', 'shop.example')).toBe(true);
    expect(bounceHostMatches('bounces.other.example', 'bounces.herald.test', 'shop.example')).toBe(false);
  });
});
