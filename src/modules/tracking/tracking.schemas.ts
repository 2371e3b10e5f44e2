import * as v from 'valibot';

/**
 * The `tracking` extension field of a send, a broadcast launch and an automation's send step:
 * `{ "opens": boolean, "clicks": boolean }` (either may be left out: the default fills it), or
 * a boolean for both.
 */
export const TrackingSettingSchema = v.pipe(
  v.union(
    [v.boolean(), v.strictObject({ opens: v.optional(v.boolean()), clicks: v.optional(v.boolean()) })],
    'must be a boolean or an object with boolean opens and clicks',
  ),
  v.description('Open pixel and click tracking (Herald extension): `{ "opens": boolean, "clicks": boolean }` or a boolean for both.'),
);

/** The choice as responses show it. */
export const TrackingChoiceResponse = v.object({ opens: v.boolean(), clicks: v.boolean() });

/** A domain's custom tracking host (GET/PATCH /domains/{id}/tracking, and the tracking events' `tracking`). */
export const TrackingDomainResponse = v.object({
  domain_id: v.string(),
  domain: v.string(),
  host: v.nullable(v.string()),
  cname_target: v.string(),
  status: v.picklist(['none', 'pending', 'verified']),
  found: v.nullable(v.string()),
  verified_at: v.nullable(v.string()),
  last_checked_at: v.nullable(v.string()),
});
