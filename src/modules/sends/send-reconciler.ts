import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { startReconcileLoop, type ReconcileLoop } from '../../temporal/reconcile-loop.ts';
import { startSendWorkflow } from './send-starter.ts';

export interface SendReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal' | 'sends'>;
  logger: Logger;
  /** Between passes (default 10 s). */
  intervalMs?: number;
  /** An accepted email whose workflow has not started for this long gets it started (default 5 s). */
  afterMs?: number;
  batchSize?: number;
}

export type SendReconciler = ReconcileLoop;

/**
 * The send reconciler (runs in every worker process). The API starts `email:<id>` right after
 * the acceptance commit; if Temporal did not take that start (down, or the api died in
 * between), `workflow_started_at` stays null. Every pass starts the workflow of open emails
 * (scheduled, queued, sending) without one, older than `afterMs`, oldest first, and stamps
 * them; a run already in progress is joined (USE_EXISTING), so a repeated start is harmless.
 */
export function startSendReconciler(options: SendReconcilerOptions): SendReconciler {
  const { orm, temporal, config, logger } = options;
  const intervalMs = options.intervalMs ?? 10_000;
  const afterMs = options.afterMs ?? 5_000;
  const batchSize = options.batchSize ?? 200;

  async function pass(): Promise<number> {
    const connection = orm.em.getConnection();
    const rows = await connection.execute<{ id: string; org_id: string; scheduled_at: Date | null; first_recipient: string | null }[]>(
      `select e.id, e.org_id, e.scheduled_at,
              (select r.email from email_recipients r where r.email_id = e.id order by r.id limit 1) as first_recipient
         from transactional_emails e
        where e.workflow_started_at is null and e.status in ('scheduled', 'queued', 'sending')
          and e.created_at < now() - make_interval(secs => ?)
        order by e.created_at limit ?`,
      [afterMs / 1000, batchSize],
    );
    for (const row of rows) {
      await temporal.connection.withDeadline(Date.now() + 10_000, () =>
        startSendWorkflow(
          temporal,
          config,
          {
            orgId: row.org_id,
            emailId: row.id,
            scheduledAt: row.scheduled_at ? new Date(row.scheduled_at) : null,
            recipientDomain: row.first_recipient?.split('@')[1] ?? '',
          },
          0,
        ),
      );
      await connection.execute('update transactional_emails set workflow_started_at = now() where id = ? and workflow_started_at is null', [row.id]);
    }
    if (rows.length > 0) logger.info('send reconciler started workflows', { count: rows.length });
    return rows.length;
  }

  return startReconcileLoop({ name: 'send reconciler', intervalMs, logger, pass });
}
