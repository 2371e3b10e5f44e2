import { describe, expect, it } from 'vitest';
import {
  afterSuccess,
  afterTemporaryFailure,
  backoffAfterFailure,
  backoffAfterSuccess,
  backoffDelay,
  createAdaptiveGate,
  initialLimit,
} from '../../src/modules/outbound/shaping/adaptive-limit.ts';
import { shapingOutcomeOf } from '../../src/modules/outbound/shaping/adaptive-relay.ts';
import { createLocalShaper } from '../../src/modules/outbound/shaping/destination-shaper.ts';
import { HOLD_MIN_MS, inDestinationSlot } from '../../src/modules/outbound/shaping/destination-slot.ts';
import { registrableSuffix, rollupKeyOf } from '../../src/modules/outbound/shaping/destination-rollup.ts';

describe('rollupKeyOf (MX rollup)', () => {
  it.each([
    [['gmail-smtp-in.l.google.com', 'alt1.gmail-smtp-in.l.google.com'], 'google'],
    [['aspmx.l.google.com.'], 'google'],
    [['googlemail-smtp-in.l.google.com'], 'google'],
    [['example-com.mail.protection.outlook.com'], 'microsoft'],
    [['mta5.am0.yahoodns.net'], 'yahoo'],
    [['mx01.mail.icloud.com'], 'apple'],
    [['eu-smtp-inbound-1.mimecast.com'], 'mimecast'],
    [['mx1.example.org', 'mx2.example.org'], 'example.org'],
    [['mail.example.co.uk'], 'example.co.uk'],
    [['mx.backup.example.com.au'], 'example.com.au'],
    [['mx.example.io'], 'example.io'],
    [['localhost'], 'localhost'],
    [['127.0.0.9'], '127.0.0.9'],
  ])('%j → %s', (hosts, key) => {
    expect(rollupKeyOf(hosts)).toBe(key);
  });

  it('gives gmail.com and googlemail.com one destination (their MX hosts are Google’s)', () => {
    expect(rollupKeyOf(['gmail-smtp-in.l.google.com'])).toBe(rollupKeyOf(['googlemail-smtp-in.l.google.com']));
  });

  it('rolls up on a known provider even when it is not the most preferred host', () => {
    expect(rollupKeyOf(['mx.example.net', 'aspmx.l.google.com'])).toBe('google');
  });

  it('takes the registrable part of a host name', () => {
    expect(registrableSuffix('a.b.c.example.net')).toBe('example.net');
    expect(registrableSuffix('mx.example.ne.jp')).toBe('example.ne.jp');
  });
});

describe('adaptive limit arithmetic', () => {
  it('grows by one per success, up to the maximum, while there is demand', () => {
    let state = initialLimit(5);
    for (let i = 0; i < 3; i += 1) state = afterSuccess(state, 20);
    expect(state.limit).toBe(8);
    for (let i = 0; i < 50; i += 1) state = afterSuccess(state, 20);
    expect(state.limit).toBe(20);
  });

  it('does not grow without demand', () => {
    expect(afterSuccess(initialLimit(5), 20, false).limit).toBe(5);
  });

  it('halves on a temporary refusal, never below one, then grows by one per `limit` successes', () => {
    let state = afterTemporaryFailure(initialLimit(20));
    expect(state).toEqual({ limit: 10, successes: 0, cautious: true });
    for (let i = 0; i < 9; i += 1) state = afterSuccess(state, 20);
    expect(state.limit).toBe(10);
    state = afterSuccess(state, 20);
    expect(state.limit).toBe(11);
    expect(afterTemporaryFailure(afterTemporaryFailure(initialLimit(2))).limit).toBe(1);
  });

  it('leaves cautious growth once the maximum is reached again', () => {
    let state = { limit: 19, successes: 0, cautious: true };
    for (let i = 0; i < 19; i += 1) state = afterSuccess(state, 20);
    expect(state).toEqual({ limit: 20, successes: 0, cautious: false });
  });

  it('doubles the back-off per refusal up to the maximum and recovers one step per success', () => {
    const settings = { baseMs: 1_000, maxMs: 5_000 };
    expect([1, 2, 3, 4].map((level) => backoffDelay(level, settings))).toEqual([1_000, 2_000, 4_000, 5_000]);
    let backoff = backoffAfterFailure({ level: 0, pausedUntil: 0 }, 10_000, settings);
    expect(backoff).toEqual({ level: 1, pausedUntil: 11_000 });
    backoff = backoffAfterFailure(backoff, 11_000, settings);
    expect(backoff).toEqual({ level: 2, pausedUntil: 13_000 });
    expect(backoffAfterSuccess(backoff).level).toBe(1);
  });
});

describe('adaptive gate (the relay pool)', () => {
  it('admits `initial` at once, grows while messages wait and the relay accepts, halves on a refusal', async () => {
    const gate = createAdaptiveGate({ initial: 2, max: 6 });
    const first = await gate.acquire();
    const second = await gate.acquire();
    let thirdAdmitted = false;
    const third = gate.acquire().then((release) => {
      thirdAdmitted = true;
      return release;
    });
    await Promise.resolve();
    expect(thirdAdmitted).toBe(false);
    first('accepted');
    await third;
    expect(gate.snapshot()).toMatchObject({ limit: 3, inFlight: 2 });
    second('temporary');
    expect(gate.snapshot()).toMatchObject({ limit: 1, inFlight: 1 });
  });

  it('never passes its maximum', async () => {
    const gate = createAdaptiveGate({ initial: 1, max: 3 });
    const releases = [await gate.acquire()];
    const pending = Array.from({ length: 6 }, () => gate.acquire());
    for (let i = 0; i < 6; i += 1) {
      releases.shift()!('accepted');
      releases.push(await pending[i]!);
      expect(gate.snapshot().inFlight).toBeLessThanOrEqual(3);
    }
    expect(gate.snapshot().limit).toBe(3);
  });
});

describe('shapingOutcomeOf', () => {
  it.each([
    [{ kind: 'unreachable', response: 'ECONNREFUSED' }, 'temporary'],
    [{ kind: 'message_refused', permanent: false, code: 421, response: '421 try later' }, 'temporary'],
    [{ kind: 'message_refused', permanent: true, code: 554, response: '554 no' }, 'accepted'],
    [{ kind: 'message_refused', permanent: false, code: 451, response: '451 4.7.0 rate limited at DATA' }, 'temporary'],
    // Greylisting or a full mailbox at RCPT says nothing about the destination's load.
    [{ kind: 'recipients', response: null, recipients: [{ email: 'a@x', accepted: false, code: 451, response: null }] }, 'ignored'],
    [{ kind: 'recipients', response: null, recipients: [{ email: 'a@x', accepted: false, code: 421, response: null }] }, 'temporary'],
    [
      { kind: 'recipients', response: null, recipients: [{ email: 'a@x', accepted: false, code: null, response: 'no host answered' }] },
      'temporary',
    ],
    [
      {
        kind: 'recipients',
        response: null,
        recipients: [
          { email: 'a@x', accepted: false, code: 451, response: null },
          { email: 'b@x', accepted: true, code: 250, response: null },
        ],
      },
      'accepted',
    ],
  ] as const)('%j → %s', (result, outcome) => {
    expect(shapingOutcomeOf(result as Parameters<typeof shapingOutcomeOf>[0])).toBe(outcome);
  });
});

describe('local destination shaper (the per-worker fallback)', () => {
  const settings = { connections: 2, ratePerMinute: 0, backoff: { baseMs: 1_000, maxMs: 8_000 } };

  it('holds a destination to its connections, apart from the others', async () => {
    const shaper = createLocalShaper(settings);
    const a1 = await shaper.acquire('a');
    await shaper.acquire('a');
    expect(await shaper.acquire('a')).toMatchObject({ kind: 'wait', backingOff: false });
    expect(await shaper.acquire('b')).toMatchObject({ kind: 'granted' });
    if (a1.kind === 'granted') a1.release('accepted');
    expect(await shaper.acquire('a')).toMatchObject({ kind: 'granted' });
  });

  it('backs a destination off after a temporary refusal until the pause ends, the others untouched', async () => {
    let now = 1_000_000;
    const shaper = createLocalShaper(settings, () => now);
    const a = await shaper.acquire('a');
    if (a.kind === 'granted') a.release('temporary');
    expect(await shaper.acquire('a')).toEqual({ kind: 'wait', retryInMs: 1_000, backingOff: true });
    expect(await shaper.acquire('b')).toMatchObject({ kind: 'granted' });
    now += 1_000;
    expect(await shaper.acquire('a')).toMatchObject({ kind: 'granted' });
  });

  it('spaces messages at the rate limit', async () => {
    let now = 0;
    const shaper = createLocalShaper({ ...settings, connections: 100, ratePerMinute: 60 }, () => now);
    expect(await shaper.acquire('a')).toMatchObject({ kind: 'granted' });
    expect(await shaper.acquire('a')).toEqual({ kind: 'wait', retryInMs: 1_000, backingOff: false });
    now += 1_000;
    expect(await shaper.acquire('a')).toMatchObject({ kind: 'granted' });
  });
});

describe('inDestinationSlot (holds are Herald’s own)', () => {
  const settings = { connections: 2, ratePerMinute: 0, backoff: { baseMs: 30_000, maxMs: 60_000 } };
  const refuse = () =>
    Promise.resolve({ results: [{ email: 'r@a.test', accepted: false, code: 421, response: '421 busy' }], response: '421 busy' });
  const hold = (response: string, heldMs: number) => ({
    results: [{ email: 'r@a.test', accepted: false, code: null, response, heldMs }],
    response,
  });

  it('passes a server’s own refusal through unmarked, then holds the destination’s next message until its pause ends', async () => {
    const shaper = createLocalShaper(settings);
    const refused = await inDestinationSlot(shaper, 'a.test', refuse, hold);
    expect(refused.results[0]).toEqual({ email: 'r@a.test', accepted: false, code: 421, response: '421 busy' });
    let ran = false;
    const held = await inDestinationSlot(
      shaper,
      'a.test',
      () => {
        ran = true;
        return refuse();
      },
      hold,
    );
    expect(ran).toBe(false);
    expect(held.results[0]?.response).toMatch(
      /^4\.4\.5 deferred by Herald: destination a\.test is backing off .*\(last refusal: 421 busy\)/,
    );
    expect(held.results[0]?.heldMs).toBeGreaterThan(25_000);
    expect(held.results[0]?.heldMs).toBeLessThanOrEqual(30_000);
  });

  it('holds a message of a destination at its connection limit for HOLD_MIN_MS, after waiting for a slot', async () => {
    const shaper = createLocalShaper({ ...settings, connections: 1 });
    expect(await shaper.acquire('b.test')).toMatchObject({ kind: 'granted' });
    const held = await inDestinationSlot(shaper, 'b.test', refuse, hold);
    expect(held.results[0]?.response).toContain('is at its connection or rate limit');
    // The slot frees in 50 ms steps, far under the floor: the floor decides.
    expect(held.results[0]?.heldMs).toBe(HOLD_MIN_MS);
  });
});
