import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailEventType } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { recordEmailEvent } from '../../src/modules/metrics/email-events.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';

const DAY = 86_400_000;

/** Events of one workspace, `daysAgo` days back, through the recorder the pipelines use. */
async function record(h: ApiHarness, orgId: string, daysAgo: number, counts: Partial<Record<EmailEventType, number>>): Promise<void> {
  const at = new Date(Date.now() - daysAgo * DAY);
  await scopeToOrg(h.stack.orm.em, orgId).transactional(async (em) => {
    let n = 0;
    for (const [type, count] of Object.entries(counts) as [EmailEventType, number][]) {
      for (let i = 0; i < count; i += 1) {
        n += 1;
        await recordEmailEvent(em, {
          orgId,
          type,
          recipient: `r${n}@example.com`,
          domain: 'example.com',
          broadcastId: null,
          occurredAt: at,
        });
      }
    }
    await em.flush();
  });
}

/** The chart's data attribute of a metrics page, decoded. */
function seriesOf(page: string): { dates: string[]; sent: number[]; delivered: number[]; bounced: number[]; complained: number[] } {
  const attribute = /data-series="([^"]+)"/.exec(page)?.[1] ?? '';
  return JSON.parse(decodeEntities(attribute)) as ReturnType<typeof seriesOf>;
}

describe('dashboard metrics page', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('needs a session', async () => {
    const page = await dashboardClient(h.api.url).get('/dashboard/metrics');
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/dashboard/sign-in');
  });

  it("charts the workspace's sent, delivered, bounced and complained per day over 7, 30 or 90 days, and only its own", async () => {
    const { org } = await createOrg(h.stack.orm);
    await record(h, org.id, 0, { sent: 5, delivered: 4, bounced: 1, complained: 1 });
    await record(h, org.id, 20, { sent: 3, delivered: 3 });
    const { org: other } = await createOrg(h.stack.orm);
    await record(h, other.id, 0, { sent: 1000, delivered: 1000 });
    const { client } = await signedInPerson(h.stack.orm, h.api.url, org.id, { email: `${unique('m').toLowerCase()}@example.com` });

    const week = await client.get('/dashboard/metrics');
    expect(week.status).toBe(200);
    expect(week.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(week.text).toContain('src="/dashboard/assets/uplot.js"');
    const series = seriesOf(week.text);
    expect(series.dates).toHaveLength(7);
    expect(series.sent.at(-1)).toBe(5);
    expect(series.delivered.at(-1)).toBe(4);
    expect(series.bounced.at(-1)).toBe(1);
    expect(series.complained.at(-1)).toBe(1);
    expect(series.sent.reduce((a, b) => a + b, 0)).toBe(5);
    expect(week.text).not.toContain('1,000');

    const month = seriesOf((await client.get('/dashboard/metrics?period=30d')).text);
    expect(month.dates).toHaveLength(30);
    expect(month.sent.reduce((a, b) => a + b, 0)).toBe(8);
    expect(seriesOf((await client.get('/dashboard/metrics?period=90d')).text).dates).toHaveLength(90);
    // An unknown period is the default week, not an error.
    expect(seriesOf((await client.get('/dashboard/metrics?period=1y')).text).dates).toHaveLength(7);
  });

  it('serves the chart library from the npm package', async () => {
    const script = await fetch(`${h.api.url}/dashboard/assets/uplot.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(await script.text()).toContain('uPlot');
    expect((await fetch(`${h.api.url}/dashboard/assets/nope.js`)).status).toBe(404);
  });
});

describe('dashboard link to the Temporal UI', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({ TEMPORAL_UI_URL: 'http://127.0.0.1:8233/' });
  });
  afterAll(() => h.close());

  it("links every page to the workspace's workflows in the Temporal UI, filtered by HeraldOrgId", async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, {
      email: `${unique('ui').toLowerCase()}@example.com`,
    });
    const page = await client.get('/dashboard/metrics');
    const href = /<a href="([^"]+)" target="_blank" rel="noopener noreferrer">Workflows \(Temporal UI\)<\/a>/.exec(page.text)?.[1];
    expect(href).toBeDefined();
    expect(decodeEntities(href!)).toBe(
      `http://127.0.0.1:8233/namespaces/${h.stack.config.temporal.namespace}/workflows?query=${encodeURIComponent(`HeraldOrgId="${h.workspace.org.id}"`)}`,
    );
  });
});
