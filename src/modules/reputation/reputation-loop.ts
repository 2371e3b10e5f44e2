import type { MikroORM } from '@mikro-orm/postgresql';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { createWarmupService } from '../warmup/warmup.service.ts';
import { createReputationService } from './reputation.service.ts';

/**
 * The reputation loop (a background loop in every worker process): each pass takes each warming
 * domain through its step of the day once the UTC day has turned (idempotent per domain and day,
 * so several workers do not step twice) and judges every workspace's reputation window, pausing
 * those past their policy. Resolves with the decisions and pauses it made.
 */
export function createReputationLoop(options: { orm: MikroORM; intervalMs?: number }): LoopSpec {
  const warmup = createWarmupService(options);
  const reputation = createReputationService(options);
  return {
    name: 'reputation',
    intervalMs: options.intervalMs ?? 60_000,
    async pass() {
      const now = new Date();
      return (await warmup.evaluateDue(now)) + (await reputation.evaluate(now));
    },
  };
}
