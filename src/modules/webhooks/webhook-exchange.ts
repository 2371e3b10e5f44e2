import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import { LRUCache } from 'lru-cache';
import { Client, type Dispatcher } from 'undici';

/**
 * The transport of webhook-http.ts: kept-alive undici connections per checked address, and
 * the handler of one request and its response (status, headers, the start of the body).
 */

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 15_000;
export const MAX_RESPONSE_READ_BYTES = 64 * 1024;
export const RESPONSE_EXCERPT_CHARS = 1024;
/** Bytes of the body kept for the excerpt: enough for RESPONSE_EXCERPT_CHARS characters of any UTF-8. */
export const EXCERPT_BYTES = RESPONSE_EXCERPT_CHARS * 4;

export type Address = { address: string; family: number };

/** How long an idle kept-alive connection stays open (below the usual 5 s server keep-alive). */
export const KEEP_ALIVE_IDLE_MS = 4_000;

/** A `lookup` for node:net that answers every query with the checked address. */
function pinnedLookup(address: string, family: number): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as LookupFunction;
}

/** Connection options of a pool or a one-off client to `address` (HTTP/1.1, no timeouts but the attempt's deadline). */
export function connectionOptions(address: Address) {
  return {
    connect: { lookup: pinnedLookup(address.address, address.family) },
    // A connect still pending at the attempt's deadline is left to this (the attempt is already answered).
    connectTimeout: DEFAULT_ATTEMPT_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_IDLE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_IDLE_MS,
    allowH2: false,
    pipelining: 1,
    headersTimeout: 0,
    bodyTimeout: 0,
  };
}

/**
 * The kept-alive connections to one checked address: undici Clients of one connection each, an
 * idle one (nothing of ours in flight) reused first, most recently used first, a new one opened
 * when none is idle. (undici's Pool would open a second connection for a request sent the moment
 * the previous response ended: with one request per connection, a client counts as busy until
 * the next turn of the event loop.)
 */
export class Connections {
  private readonly all = new Set<Client>();
  private readonly idle: Client[] = [];
  private readonly origin: string;
  private readonly address: Address;

  constructor(origin: string, address: Address) {
    this.origin = origin;
    this.address = address;
  }

  /** A client for one request; hand it back with `release` once the request is settled. */
  acquire(): Client {
    let client = this.idle.pop();
    if (client === undefined) {
      client = new Client(this.origin, connectionOptions(this.address));
      this.all.add(client);
    }
    return client;
  }

  release(client: Client): void {
    if (this.all.has(client)) this.idle.push(client);
  }

  destroy(): void {
    for (const client of this.all) void client.destroy().catch(() => {});
    this.all.clear();
    this.idle.length = 0;
  }
}

/** Kept-alive connections, per scheme, host, port and checked address (so a pooled socket only ever reaches that address). */
const connections = new LRUCache<string, Connections>({ max: 2_000, dispose: (pool) => pool.destroy() });
export function connectionsFor(target: URL, address: Address): Connections {
  const key = `${target.protocol}//${target.host}|${address.address}`;
  let pool = connections.get(key);
  if (pool === undefined) {
    pool = new Connections(target.origin, address);
    connections.set(key, pool);
  }
  return pool;
}

/** A refused or failed attempt, with the text stored in the attempt's `error`. */
export class AttemptError extends Error {}

/** A reused kept-alive socket that the receiver had closed before any answer. */
export class ReusedSocketClosed extends Error {}

/**
 * One request and its response as undici's dispatcher reports them: the status, the headers
 * and the first EXCERPT_BYTES of at most MAX_RESPONSE_READ_BYTES read (then the connection is
 * dropped). `done` settles once, with the exchange or the error; an attempt's deadline aborts it.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  readonly chunks: Buffer[] = [];
  private read = 0;
  private kept = 0;
  private answered = false;
  private settled = false;
  private controller: Dispatcher.DispatchController | null = null;
  private expired: Error | null = null;
  private resolve!: (exchange: Exchange) => void;
  private reject!: (error: unknown) => void;
  readonly done = new Promise<Exchange>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
  /** Where the client goes back once the exchange is settled (null: a one-off client). */
  private readonly owner: Connections | null;
  readonly client: Client;

  constructor(owner: Connections | null, client: Client) {
    this.owner = owner;
    this.client = client;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Started after its deadline (it waited for a connection): never sent.
    if (this.expired !== null) controller.abort(this.expired);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.answered = true;
    this.statusCode = statusCode;
    this.headers = headers;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.read >= MAX_RESPONSE_READ_BYTES) return;
    if (this.kept < EXCERPT_BYTES) {
      const part = chunk.length <= EXCERPT_BYTES - this.kept ? chunk : chunk.subarray(0, EXCERPT_BYTES - this.kept);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.read += chunk.length;
    if (this.read >= MAX_RESPONSE_READ_BYTES) {
      // Enough for the record: stop reading and drop the connection.
      this.settle(null);
      controller.abort(new AttemptError('response read limit reached'));
    }
  }

  onResponseEnd(): void {
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.answered) this.settle(new AttemptError('the receiver closed the connection before the response was complete'));
    else this.settle(reusedAndClosed(error) ? new ReusedSocketClosed(error.message) : error);
  }

  /** The attempt's deadline passed: answer with `error` and drop the request, sent or not. */
  expire(error: Error): void {
    this.expired = error;
    this.settle(error);
    this.controller?.abort(error);
  }

  private settle(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.owner?.release(this.client);
    if (this.expired !== null) this.reject(this.expired);
    else if (error === null) this.resolve(this);
    else this.reject(error);
  }
}

/** The socket closed before any answer after it had carried an earlier exchange (a kept-alive socket the receiver closed). */
function reusedAndClosed(error: Error): boolean {
  const e = error as Error & { code?: string; socket?: { bytesRead?: number } };
  return e.code === 'UND_ERR_SOCKET' && (e.socket?.bytesRead ?? 0) > 0;
}
