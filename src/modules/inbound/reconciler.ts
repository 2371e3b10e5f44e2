import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { startReconcileLoop, type ReconcileLoop } from '../../temporal/reconcile-loop.ts';
import { startInboundWorkflow } from './inbound-starter.ts';

export interface InboundReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  /** Between passes (default 10 s). */
  intervalMs?: number;
  /** A raw message `received` for longer than this gets its workflow started (default 5 s). */
  afterMs?: number;
  batchSize?: number;
  /** A start gives up on an unresponsive Temporal after this long (default 10 s). */
  startDeadlineMs?: number;
  eagerStart?: boolean;
}

export type InboundReconciler = ReconcileLoop;

/**
 * The inbound reconciler (runs in every worker process). The smtp process answers 250 once the
 * raw message is stored and recorded, then starts `inbound:<id>`; if Temporal did not take that
 * start (down, or the smtp process died in between), the row stays `received`. Every pass starts
 * the workflow of `received` rows older than `afterMs`, oldest first; a run already in progress
 * is joined (USE_EXISTING), so repeating a start is harmless, and several workers may run it.
 */
export function startInboundReconciler(options: InboundReconcilerOptions): InboundReconciler {
  const { orm, temporal, config, logger } = options;
  const intervalMs = options.intervalMs ?? 10_000;
  const afterMs = options.afterMs ?? 5_000;
  const batchSize = options.batchSize ?? 200;
  const startDeadlineMs = options.startDeadlineMs ?? 10_000;

  async function pass(): Promise<number> {
    const rows = await orm.em.getConnection().execute<{ id: string }[]>(
      `select id from inbound_messages
        where status = 'received' and created_at < now() - make_interval(secs => ?)
        order by created_at limit ?`,
      [afterMs / 1000, batchSize],
    );
    for (const row of rows) {
      await temporal.connection.withDeadline(Date.now() + startDeadlineMs, () =>
        startInboundWorkflow(temporal, config, { inboundId: row.id }, { eager: options.eagerStart ?? false }),
      );
    }
    return rows.length;
  }

  return startReconcileLoop({ name: 'inbound reconciler', intervalMs, logger, pass });
}
