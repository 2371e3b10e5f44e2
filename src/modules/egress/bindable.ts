import { createServer } from 'node:net';

/** Binds a listening socket to `address` (any port) and closes it: the OS's answer to "is this address mine?". */
function tryBind(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(`${address}: ${error.code ?? error.message}`));
    server.listen({ host: address, port: 0, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/**
 * Checks at the worker's start that every egress address belongs to this host (a socket can be
 * bound to it); throws one message naming each address that cannot be, rather than failing
 * every delivery later.
 */
export async function checkEgressAddresses(addresses: readonly string[]): Promise<void> {
  const problems = (await Promise.all(addresses.map(tryBind))).filter((problem): problem is string => problem !== null);
  if (problems.length > 0) {
    throw new Error(
      `EGRESS_POOLS: these source addresses cannot be bound on this host (add them to an interface, or remove them): ${problems.join(', ')}`,
    );
  }
}
