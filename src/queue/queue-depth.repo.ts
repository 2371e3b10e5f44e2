import type { EntityManager } from '@mikro-orm/postgresql';

/** Herald's queue pipelines, as metrics label them. */
export type Pipeline = 'webhooks' | 'sends' | 'inbound' | 'automations';

/** A pipeline's queue at one instant: its open rows and how long the oldest due one has waited. */
export interface QueueDepth {
  pipeline: Pipeline;
  depth: number;
  oldest_due_s: number;
}

/** One statement for the four queues: the metrics scrape reads them together. */
const QUEUE_DEPTH_SQL = `
  /* all workspaces: queue depth and oldest due age for Prometheus */
  select 'webhooks' as pipeline, count(*)::int as depth,
         coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8 as oldest_due_s
    from webhook_deliveries where status in ('queued', 'failed', 'delivering')
  union all
  select 'sends', count(*)::int,
         coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8
    from transactional_emails where status in ('scheduled', 'queued', 'sending')
  union all
  select 'inbound', count(*)::int,
         coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8
    from inbound_messages where status = 'received'
  union all
  select 'automations', count(*)::int,
         coalesce(extract(epoch from now() - min(due_at) filter (where due_at <= now())), 0)::float8
    from automation_runs where status = 'active'`;

/** The webhook, send, inbound and automation queues' depth and oldest due age, across workspaces. */
export function readQueueDepths(em: EntityManager): Promise<QueueDepth[]> {
  return em.getConnection().execute<QueueDepth[]>(QUEUE_DEPTH_SQL);
}
