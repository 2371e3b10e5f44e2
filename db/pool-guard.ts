import type { Pool, PoolClient } from 'pg';

/**
 * Gives the pool back the connections PostgreSQL cut while they were checked out. Kysely's
 * controlled transactions (what MikroORM's `transactional` runs on) release their connection only
 * after a successful BEGIN, COMMIT or ROLLBACK: when the server goes away mid-transaction those
 * statements fail, the connection is never released, and pg-pool keeps counting it. A few
 * outages later every slot is held by a dead connection and each request waits out the connect
 * timeout: the API stays 503 until a restart. Here, a checked-out client whose connection ends is
 * released with an error (pg-pool then discards it), and the holder's later release, if it comes,
 * does nothing.
 */
export function guardPool(pool: Pool): void {
  const checkedOut = new Set<PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('remove', (client) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      const release = client.release.bind(client);
      client.release = () => {};
      release(new Error('the connection ended while checked out'));
    });
  });
}
