import { readFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { installTemporalLogging, WORKFLOWS_PATH } from '../../src/worker.ts';

/**
 * Histories recorded by real runs, replayed against today's workflow code: a change that would
 * make a run recorded before it fail on replay (a non-determinism error) fails here. The
 * actors' histories (a webhook endpoint draining a failed and retried delivery, woken by
 * signals; a sending domain draining, then sleeping until a scheduled send; the inbound actor
 * draining, sleeping, woken by the smtp process's signal and draining again) were recorded
 * running, with the first version of the actors.
 */
const HISTORIES = new URL('../fixtures/histories/', import.meta.url);

/** A history as `fetchHistory()` gave it, saved with JSON.stringify (enums by name, bytes in base64). */
function history(name: string): { events: { eventType: string }[] } {
  return JSON.parse(readFileSync(new URL(name, HISTORIES), 'utf8')) as { events: { eventType: string }[] };
}

describe('workflow replay of recorded histories', () => {
  beforeAll(() => {
    installTemporalLogging(createLogger('silent'));
  });

  it.each([
    ['webhook-endpoint-actor.current.json', 'ACTIVITY_TASK_COMPLETED', 2],
    ['send-domain-actor.current.json', 'TIMER_FIRED', 1],
    ['inbound-intake-actor.current.json', 'TIMER_CANCELED', 1],
  ])(
    'replays %s (%s × %i) without a determinism error',
    async (name, type, count) => {
      const recorded = history(name);
      expect(recorded.events.filter((event) => event.eventType === `EVENT_TYPE_${type}`)).toHaveLength(count);
      await expect(
        Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, temporal.api.history.v1.History.fromObject(recorded), `replay-${name}`),
      ).resolves.toBeUndefined();
    },
    120_000,
  );
});
