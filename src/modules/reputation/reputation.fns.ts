/**
 * The per-workspace reputation policy as data, and its judgement of one window. Past either
 * threshold (with at least `min_volume` messages sent in the window) the workspace's sending
 * pauses: its broadcast messages (`pause: 'broadcast'`, the default: transactional mail goes on)
 * or everything (`pause: 'all'`: new sends are refused too).
 */
export interface ReputationPolicy {
  /** The sliding window the rates are measured over, in hours. */
  window_hours: number;
  min_volume: number;
  max_bounce_rate: number;
  max_complaint_rate: number;
  pause: 'broadcast' | 'all';
}

export const DEFAULT_REPUTATION_POLICY: ReputationPolicy = {
  window_hours: 24,
  min_volume: 200,
  max_bounce_rate: 0.05,
  max_complaint_rate: 0.001,
  pause: 'broadcast',
};

export function resolvePolicy(override: Record<string, unknown> | null | undefined): ReputationPolicy {
  return { ...DEFAULT_REPUTATION_POLICY, ...(override as Partial<ReputationPolicy> | null) };
}

export interface WindowCounts {
  sent: number;
  bounced: number;
  complained: number;
}

/** Why a workspace's sending paused: what an owner sees, and the `data` of workspace.reputation_paused. */
export interface PauseReason {
  scope: ReputationPolicy['pause'];
  reason: string;
  bounce_rate: number;
  complaint_rate: number;
  sent: number;
  window_hours: number;
  max_bounce_rate: number;
  max_complaint_rate: number;
}

const percent = (value: number) => `${(value * 100).toFixed(2).replace(/\.?0+$/, '')} %`;

/** The pause a window calls for, or null when the rates are within the policy (or too few were sent to judge). */
export function judgeWindow(policy: ReputationPolicy, counts: WindowCounts): PauseReason | null {
  if (counts.sent < policy.min_volume || counts.sent === 0) return null;
  const bounceRate = counts.bounced / counts.sent;
  const complaintRate = counts.complained / counts.sent;
  const over = [
    bounceRate >= policy.max_bounce_rate
      ? `bounce rate ${percent(bounceRate)} reached the limit of ${percent(policy.max_bounce_rate)}`
      : null,
    complaintRate >= policy.max_complaint_rate
      ? `complaint rate ${percent(complaintRate)} reached the limit of ${percent(policy.max_complaint_rate)}`
      : null,
  ].filter((part): part is string => part !== null);
  if (over.length === 0) return null;
  const paused = policy.pause === 'all' ? 'All sending is paused' : 'Broadcast sending is paused (transactional mail continues)';
  return {
    scope: policy.pause,
    reason: `${paused}: over the last ${policy.window_hours} h the ${over.join(' and the ')} on ${counts.sent} messages sent. An operator resumes it once the cause (usually a stale or bought list) is fixed.`,
    bounce_rate: bounceRate,
    complaint_rate: complaintRate,
    sent: counts.sent,
    window_hours: policy.window_hours,
    max_bounce_rate: policy.max_bounce_rate,
    max_complaint_rate: policy.max_complaint_rate,
  };
}
