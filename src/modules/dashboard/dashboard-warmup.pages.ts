import { html } from 'ghtml';
import type { ReputationStatus } from '../reputation/reputation.service.ts';
import type { WarmupView } from '../warmup/warmup.serializer.ts';
import { csrfField } from './dashboard.pages.ts';

const text = (value: unknown) => (typeof value === 'string' ? value : '');
const pct = (rate: unknown) => `${(Number(rate) * 100).toFixed(2).replace(/\.?0+$/, '')} %`;
const count = (value: number | null) => (value === null ? 'no cap' : value.toLocaleString('en-US'));

const MODE_TEXT: Record<string, string> = {
  off: 'Automatic warm-up is off for this domain.',
  new: 'Warming up as a new domain.',
  existing: 'Warming up as a domain with a sending history.',
  done: 'Warm-up is done: the domain sends at full volume.',
};

/** The banner of a workspace whose sending its reputation policy paused: what is paused, why, and who can lift it. */
export function reputationBanner(status: ReputationStatus | undefined): string {
  if (!status?.paused_at || !status.pause) return '';
  return html`<div class="error" role="alert" id="reputation-banner"><strong>${status.pause.scope === 'all' ? 'Sending' : 'Broadcast sending'} is paused for this workspace.</strong> ${text(status.pause.reason)} Paused since ${status.paused_at}.</div>`;
}

/** The warm-up card of a domain page: what today allows and why, and the form that starts, stops or re-plans it. */
export function warmupSection(view: WarmupView, domainId: string, csrfToken: string): string {
  const last = view.last_evaluation;
  const today =
    view.day === null
      ? ''
      : html`<p>Day <strong>${String(view.day)}</strong> of ${String(view.days)}: up to <strong id="warmup-cap">${count(view.cap_today)}</strong> broadcast messages today (${count(view.used_today)} counted so far, transactional mail included). If today's rates stay under the limits, tomorrow allows ${count(view.next_cap)}; judged at ${view.next_evaluation_at ?? ''}.</p>`;
  const lastText = last ? html`<p class="hint">Last step (${text(last.day)}): ${text(last.reason)}</p>` : '';
  const schedule = view.mode === 'existing' ? view.plan.existing_domain : view.plan.new_domain;
  return html`<section aria-labelledby="warmup-title" class="card" id="warmup">
  <h2 id="warmup-title">Warm-up</h2>
  <p>${MODE_TEXT[String(view.mode)] ?? ''}</p>
  !${today}
  !${lastText}
  <p class="hint">Warm-up limits broadcast and automation messages; transactional mail counts against the day but is refused only by a fixed cap (${count(view.manual_cap)}). A step advances only while bounces stay under ${pct(view.plan.max_bounce_rate)} and complaints under ${pct(view.plan.max_complaint_rate)}, with at least ${String(view.plan.min_volume)} messages sent; at twice a limit it steps back.</p>
  <form method="post" action="/dashboard/domains/${domainId}/warmup">
    !${csrfField(csrfToken)}
    <label for="warmup-mode">Schedule</label>
    <select id="warmup-mode" name="mode">
      !${(['new', 'existing', 'off'] as const).map((mode) => html`<option value="${mode}"!${view.mode === mode ? ' selected' : ''}>${mode === 'off' ? 'Off' : mode === 'new' ? 'New domain' : 'Existing domain'}</option>`).join('')}
    </select>
    <label for="warmup-schedule">Daily caps of this domain's plan, comma-separated</label>
    <input id="warmup-schedule" name="schedule" type="text" autocomplete="off" spellcheck="false" value="${schedule.join(', ')}">
    <p class="hint">Changing the schedule type starts it again from day 1.</p>
    <button type="submit">Save warm-up</button>
  </form>
</section>`;
}
