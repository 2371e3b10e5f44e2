import { describe, expect, it } from 'vitest';
import { judgeWindow, resolvePolicy } from '../../src/modules/reputation/reputation.fns.ts';
import { DEFAULT_WARMUP_PLAN, decideStep, initialCap, resolvePlan, startingWarmup } from '../../src/modules/warmup/warmup.fns.ts';

const plan = DEFAULT_WARMUP_PLAN;

describe('warm-up plan arithmetic', () => {
  it("starts a new domain at Resend's day 1 (150) and an existing one at 1,000; off has no cap", () => {
    expect(initialCap(plan, 'new')).toBe(150);
    expect(initialCap(plan, 'existing')).toBe(1000);
    expect(initialCap(plan, 'off')).toBeNull();
    expect(plan.new_domain[6]).toBe(2000);
    expect(plan.existing_domain.at(6)).toBe(10000);
    expect(startingWarmup('new', null, new Date('2026-11-27T10:00:00Z'))).toMatchObject({
      warmupMode: 'new',
      warmupStep: 0,
      warmupCap: 150,
      warmupEvaluatedOn: '2026-11-27',
    });
  });

  it('advances one step while bounces stay under 4 % and complaints under 0.08 %', () => {
    const outcome = decideStep(plan, 'new', 0, { sent: 150, bounced: 5, complained: 0 });
    expect(outcome).toMatchObject({ decision: 'advance', step: 1, cap: 250 });
    expect(outcome.bounce_rate).toBeCloseTo(5 / 150);
  });

  it('holds at or over a threshold, and steps back at twice it', () => {
    expect(decideStep(plan, 'new', 3, { sent: 700, bounced: 28, complained: 0 })).toMatchObject({ decision: 'hold', step: 3, cap: 700 });
    expect(decideStep(plan, 'new', 3, { sent: 10000, bounced: 0, complained: 8 })).toMatchObject({ decision: 'hold', step: 3 });
    expect(decideStep(plan, 'new', 3, { sent: 700, bounced: 56, complained: 0 })).toMatchObject({
      decision: 'step_back',
      step: 2,
      cap: 400,
    });
    expect(decideStep({ ...plan, step_back: false }, 'new', 3, { sent: 700, bounced: 56, complained: 0 })).toMatchObject({
      decision: 'hold',
      step: 3,
    });
    // Day 1 cannot go further back: it holds.
    expect(decideStep(plan, 'new', 0, { sent: 100, bounced: 50, complained: 0 })).toMatchObject({ decision: 'hold', step: 0, cap: 150 });
  });

  it('holds below the minimum volume (nothing proven), and is done after the last step', () => {
    expect(decideStep(plan, 'new', 2, { sent: 10, bounced: 0, complained: 0 })).toMatchObject({ decision: 'hold', step: 2, cap: 400 });
    const last = plan.existing_domain.length - 1;
    expect(decideStep(plan, 'existing', last, { sent: 50000, bounced: 10, complained: 0 })).toMatchObject({ decision: 'done', cap: null });
  });

  it('takes the workspace plan over the default and the domain plan over both, field by field', () => {
    const resolved = resolvePlan({ new_domain: [10, 20], max_bounce_rate: 0.02 }, { new_domain: [5, 50] });
    expect(resolved).toMatchObject({ new_domain: [5, 50], max_bounce_rate: 0.02, max_complaint_rate: 0.0008 });
    expect(decideStep(resolved, 'new', 0, { sent: 100, bounced: 3, complained: 0 })).toMatchObject({ decision: 'hold' });
  });
});

describe('workspace reputation window', () => {
  const policy = resolvePolicy(null);
  it('pauses broadcasts past a threshold with enough volume, and explains why', () => {
    const pause = judgeWindow(policy, { sent: 1000, bounced: 60, complained: 0 });
    expect(pause).toMatchObject({ scope: 'broadcast', sent: 1000, window_hours: 24 });
    expect(pause!.reason).toMatch(/bounce rate 6 % reached the limit of 5 %/);
    expect(judgeWindow(resolvePolicy({ pause: 'all' }), { sent: 1000, bounced: 0, complained: 1 })).toMatchObject({ scope: 'all' });
  });

  it('does not judge below the minimum volume or under the thresholds', () => {
    expect(judgeWindow(policy, { sent: 100, bounced: 50, complained: 5 })).toBeNull();
    expect(judgeWindow(policy, { sent: 1000, bounced: 49, complained: 0 })).toBeNull();
  });
});
