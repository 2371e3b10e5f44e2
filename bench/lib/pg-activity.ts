import { withClient } from './seed.ts';

interface Counters {
  xact_commit: number;
  xact_rollback: number;
  tup_returned: number;
  tup_fetched: number;
  tup_inserted: number;
  tup_updated: number;
  tables: Record<string, TableCounters>;
}

interface TableCounters {
  seq_scan: number;
  idx_scan: number;
  n_tup_ins: number;
  n_tup_upd: number;
  n_tup_hot_upd: number;
  n_tup_del: number;
}

/** The database's and each table's activity counters so far (pg_stat_database and pg_stat_user_tables, as published). */
export async function counters(databaseUrl: string): Promise<Counters> {
  return withClient(databaseUrl, async (client) => {
    await client.query('select pg_stat_clear_snapshot()');
    const database = await client.query<Omit<Counters, 'tables'>>(
      `select xact_commit::float8 as xact_commit, xact_rollback::float8 as xact_rollback, tup_returned::float8 as tup_returned,
              tup_fetched::float8 as tup_fetched, tup_inserted::float8 as tup_inserted, tup_updated::float8 as tup_updated
         from pg_stat_database where datname = current_database()`,
    );
    const tables = await client.query<TableCounters & { relname: string }>(
      `select relname, seq_scan::float8 as seq_scan, coalesce(idx_scan, 0)::float8 as idx_scan,
              n_tup_ins::float8 as n_tup_ins, n_tup_upd::float8 as n_tup_upd, n_tup_hot_upd::float8 as n_tup_hot_upd,
              n_tup_del::float8 as n_tup_del
         from pg_stat_user_tables t`,
    );
    return { ...database.rows[0]!, tables: Object.fromEntries(tables.rows.map(({ relname, ...rest }) => [relname, rest])) };
  });
}

/**
 * What one request costs the database: runs `requests` requests one at a time and divides the
 * growth of pg_stat_database and pg_stat_user_tables by it (transactions, rows read, scans per
 * table). A backend publishes its statistics when it goes idle, at most once a second, and
 * otherwise 10 s later: hence the pause before the second reading.
 */
export async function databaseWorkPerRequest(databaseUrl: string, requests: number, request: () => Promise<void>): Promise<string> {
  const before = await counters(databaseUrl);
  for (let i = 0; i < requests; i += 1) await request();
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const after = await counters(databaseUrl);
  const per = (a: number, b: number) => ((a - b) / requests).toFixed(2);
  const lines = [
    `over ${requests} requests one at a time, per request:`,
    `  transactions committed ${per(after.xact_commit, before.xact_commit)}, rolled back ${per(after.xact_rollback, before.xact_rollback)}`,
    `  rows returned ${per(after.tup_returned, before.tup_returned)}, fetched ${per(after.tup_fetched, before.tup_fetched)}, inserted ${per(after.tup_inserted, before.tup_inserted)}, updated ${per(after.tup_updated, before.tup_updated)}`,
  ];
  for (const [table, now] of Object.entries(after.tables)) {
    const then = before.tables[table] ?? {
      seq_scan: 0,
      idx_scan: 0,
      n_tup_ins: 0,
      n_tup_upd: 0,
      n_tup_hot_upd: 0,
      n_tup_del: 0,
    };
    const scans = [
      ['seq scans', now.seq_scan - then.seq_scan],
      ['index scans', now.idx_scan - then.idx_scan],
      ['rows inserted', now.n_tup_ins - then.n_tup_ins],
      ['rows updated', now.n_tup_upd - then.n_tup_upd],
    ].filter(([, delta]) => Number(delta) > 0);
    if (scans.length > 0)
      lines.push(`  ${table}: ${scans.map(([name, delta]) => `${name} ${(Number(delta) / requests).toFixed(2)}`).join(', ')}`);
  }
  return lines.join('\n');
}

/**
 * What `units` items cost the database between two readings of `counters` (the second taken
 * at least 11 s after the work, when every backend has published its statistics): transactions
 * and rows written per item; `tables` names the tables written, with the updates that were not
 * HOT (each of those, like each inserted row, writes an entry in every index whose predicate the
 * row meets).
 */
export function writesPerUnit(before: Counters, after: Counters, units: number) {
  const per = (value: number) => value / units;
  const tables: string[] = [];
  for (const [table, now] of Object.entries(after.tables)) {
    const then = before.tables[table] ?? { n_tup_ins: 0, n_tup_upd: 0, n_tup_hot_upd: 0, n_tup_del: 0 };
    const inserted = now.n_tup_ins - then.n_tup_ins;
    const updated = now.n_tup_upd - then.n_tup_upd;
    const deleted = now.n_tup_del - then.n_tup_del;
    const cold = updated - (now.n_tup_hot_upd - then.n_tup_hot_upd);
    if (inserted + updated + deleted > 0)
      tables.push(
        `${table} +${per(inserted).toFixed(2)} ~${per(updated).toFixed(2)} (${per(cold).toFixed(2)} not HOT) -${per(deleted).toFixed(2)}`,
      );
  }
  return {
    figures: {
      commits: per(after.xact_commit - before.xact_commit),
      rollbacks: per(after.xact_rollback - before.xact_rollback),
      rows_inserted: per(after.tup_inserted - before.tup_inserted),
      rows_updated: per(after.tup_updated - before.tup_updated),
    },
    tables: tables.sort().join('\n'),
  };
}
