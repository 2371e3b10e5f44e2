import { html } from 'ghtml';
import type { MetricsPeriod } from '../metrics/metrics.fns.ts';
import type { DailyOutcomes, DashboardMetrics } from '../metrics/metrics.service.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { layout } from './dashboard.pages.ts';

/** The periods the metrics page offers. */
export const DASHBOARD_PERIODS = ['7d', '30d', '90d'] as const satisfies readonly MetricsPeriod[];

const percent = (rate: number) => `${(rate * 100).toFixed(2)} %`;
const count = (n: number) => n.toLocaleString('en-US');

/**
 * The metrics page: totals and rates of the period, a chart of the daily outcomes (uPlot, drawn
 * by assets/dashboard.js from the chart element's data attribute), the same numbers as a table
 * (for screen readers and without JavaScript), and the top campaigns.
 */
export function metricsPage(model: {
  signedIn: SignedIn;
  period: MetricsPeriod;
  metrics: DashboardMetrics;
  daily: readonly DailyOutcomes[];
}): string {
  const { summary, rates } = model.metrics;
  const tiles: [string, string, string][] = [
    ['Sent', count(summary.sent), ''],
    ['Delivered', count(summary.delivered), percent(rates.delivery)],
    ['Bounced', count(summary.bounced), percent(rates.bounce)],
    ['Complained', count(summary.complained), percent(rates.complaint)],
    ['Opened', count(summary.opened), percent(rates.open)],
    ['Clicked', count(summary.clicked), percent(rates.click)],
  ];
  const series = {
    dates: model.daily.map((d) => d.date),
    sent: model.daily.map((d) => d.sent),
    delivered: model.daily.map((d) => d.delivered),
    bounced: model.daily.map((d) => d.bounced),
    complained: model.daily.map((d) => d.complained),
  };
  return layout(
    'Metrics',
    html`<nav class="periods" aria-label="Period">!${DASHBOARD_PERIODS.map((p) => html`<a href="/dashboard/metrics?period=${p}"!${p === model.period ? ' aria-current="page"' : ''}>Last ${p.slice(0, -1)} days</a>`).join('')}</nav>
<ul class="tiles">!${tiles.map(([label, value, share]) => html`<li class="card"><span class="tile-label">${label}</span> <strong>${value}</strong>!${share ? html` <span class="hint">${share}</span>` : ''}</li>`).join('')}</ul>
<section aria-labelledby="chart-title" class="card">
  <h2 id="chart-title">Sent, delivered, bounced and complained per day</h2>
  <div id="outcomes-chart" class="chart" data-chart="outcomes" data-series="${JSON.stringify(series)}" role="img" aria-label="Daily outcomes chart; the table below has the same numbers"></div>
  <details><summary>The numbers per day</summary>
    <table class="keys"><thead><tr><th scope="col">Day</th><th scope="col">Sent</th><th scope="col">Delivered</th><th scope="col">Bounced</th><th scope="col">Complained</th></tr></thead>
    <tbody>!${model.daily.map((d) => html`<tr><td data-label="Day">${d.date}</td><td data-label="Sent">${count(d.sent)}</td><td data-label="Delivered">${count(d.delivered)}</td><td data-label="Bounced">${count(d.bounced)}</td><td data-label="Complained">${count(d.complained)}</td></tr>`).join('')}</tbody></table>
  </details>
</section>
<section aria-labelledby="campaigns-title">
  <h2 id="campaigns-title">Top campaigns</h2>
  !${
    model.metrics.topCampaigns.length === 0
      ? html`<p>No broadcast sent in this period: choose a longer period above, or send a broadcast.</p>`
      : html`<table class="keys"><thead><tr><th scope="col">Broadcast</th><th scope="col">Sent</th><th scope="col">Delivered</th><th scope="col">Opened</th><th scope="col">Clicked</th></tr></thead>
      <tbody>!${model.metrics.topCampaigns.map((c) => html`<tr><td data-label="Broadcast">${c.name ?? c.broadcastId}</td><td data-label="Sent">${count(c.sent)}</td><td data-label="Delivered">${count(c.delivered)}</td><td data-label="Opened">${count(c.opened)}</td><td data-label="Clicked">${count(c.clicked)}</td></tr>`).join('')}</tbody></table>`
  }
</section>
<script src="/dashboard/assets/uplot.js" defer></script>`,
    model.signedIn,
    'metrics',
  );
}
