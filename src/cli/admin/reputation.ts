import { type CommandGroup, integer, json, rateOption, required, UsageError, type Values } from './options.ts';

/** The reputation policy fields given on the command line. */
function policyOptions(values: Values): Record<string, unknown> {
  const pause = values.pause as string | undefined;
  if (pause !== undefined && pause !== 'broadcast' && pause !== 'all') throw new UsageError('--pause must be broadcast or all');
  const fields = {
    pause,
    window_hours: integer(values, 'window-hours'),
    min_volume: integer(values, 'min-volume'),
    max_bounce_rate: rateOption(values, 'max-bounce-rate'),
    max_complaint_rate: rateOption(values, 'max-complaint-rate'),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** A workspace's reputation pause and policy. */
export const reputationCommands: CommandGroup = (svc) => ({
  'reputation show': {
    usage: "reputation show --org ID   (the workspace's reputation policy and pause)",
    options: { ...json, org: { type: 'string' } },
    async run(values) {
      const status = await svc().reputation.status(required(values, 'org'));
      const reason = (status.pause?.reason as string | undefined) ?? '';
      return { json: status, text: status.paused_at ? `paused since ${status.paused_at}: ${reason}` : 'sending' };
    },
  },
  'reputation resume': {
    usage: "reputation resume --org ID   (lift the workspace's reputation pause; its window starts again)",
    options: { ...json, org: { type: 'string' } },
    async run(values) {
      const org = required(values, 'org');
      const record = await svc().reputation.resume(org, 'operator');
      return { json: { org_id: org, ...record }, text: `resumed sending of workspace ${org}` };
    },
  },
  'reputation policy': {
    usage:
      'reputation policy --org ID [--pause broadcast|all] [--window-hours N] [--min-volume N] [--max-bounce-rate R] [--max-complaint-rate R] [--reset]',
    options: {
      ...json,
      org: { type: 'string' },
      pause: { type: 'string' },
      'window-hours': { type: 'string' },
      'min-volume': { type: 'string' },
      'max-bounce-rate': { type: 'string' },
      'max-complaint-rate': { type: 'string' },
      reset: { type: 'boolean' },
    },
    async run(values) {
      const org = required(values, 'org');
      const current = values.reset === true ? {} : (await svc().reputation.status(org)).policy;
      const policy = await svc().reputation.setPolicy(org, { ...current, ...policyOptions(values) });
      return { json: policy, text: `reputation policy of ${org}: ${JSON.stringify(policy)}` };
    },
  },
});
