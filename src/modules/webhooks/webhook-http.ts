import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import { Client, type Dispatcher } from 'undici';
import { forbiddenRangeOf } from '../../net/address-policy.ts';
import {
  AttemptError,
  Connections,
  connectionOptions,
  connectionsFor,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  Exchange,
  RESPONSE_EXCERPT_CHARS,
  EXCERPT_BYTES,
  ReusedSocketClosed,
  type Address,
} from './webhook-exchange.ts';

export { DEFAULT_ATTEMPT_TIMEOUT_MS, KEEP_ALIVE_IDLE_MS, MAX_RESPONSE_READ_BYTES, RESPONSE_EXCERPT_CHARS } from './webhook-exchange.ts';

/**
 * The one HTTP client of webhook deliveries, closed against SSRF and slow receivers:
 *
 * - the host is resolved here (every address) and refused when any address is forbidden
 *   (src/net/address-policy.ts) unless private targets are allowed; the socket then connects to the
 *   address that was checked (a `lookup` that answers with it), so a second DNS answer cannot
 *   move the request elsewhere (rebinding); Host and TLS SNI stay the URL's host name;
 * - redirects are never followed (a 3xx is a failed attempt that names the Location);
 * - one deadline (15 s by default) covers DNS, connect, TLS, request and response; at most
 *   64 KiB of the response body is read, of which 1 KiB is kept;
 * - HTTP/1.1 only, connections kept alive per (scheme, host, port, checked address): a pooled
 *   socket was opened to an address that passed the check, so reusing it cannot reach anything
 *   else; an idle socket closes after KEEP_ALIVE_IDLE_MS (or sooner when the receiver's
 *   Keep-Alive says so), an idle socket the receiver has closed is noticed before it is reused,
 *   and a request whose reused socket turns out closed before any answer is sent once more on a
 *   fresh connection;
 * - a host name's checked answer is reused for DNS_CACHE_MS (the check runs on every use).
 *
 * The client is undici's Client (one connection each) driven through `dispatch` with a handler
 * per attempt (no streams, no AbortSignal): about half the CPU per request of node:http's ClientRequest with a
 * kept-alive Agent (BENCHMARKS.md, 2026-11-28 "webhook HTTP client").
 */

export interface PostOptions {
  allowPrivateTargets: boolean;
  timeoutMs?: number;
  /** Resolves every address of a host name (tests swap it; default node:dns lookup, all: true). */
  resolve?: (host: string) => Promise<{ address: string; family: number }[]>;
}

export interface PostResult {
  /** The receiver's status, or null when no response arrived. */
  statusCode: number | null;
  headers: IncomingHttpHeaders;
  /** At most RESPONSE_EXCERPT_CHARS characters of the body, NUL characters removed. */
  excerpt: string | null;
  /** Why the attempt failed before or instead of a response (refused target, DNS, timeout, …). */
  error: string | null;
  latencyMs: number;
  /** The address connected to, when one was chosen. */
  address: string | null;
}

const lookupAll = (host: string) => dnsLookup(host, { all: true, verbatim: true });
/** How long a host name's addresses are reused before the next lookup. */
export const DNS_CACHE_MS = 30_000;

const resolved = new LRUCache<string, Address[]>({ max: 10_000, ttl: DNS_CACHE_MS });
/** node:dns lookups, each host's answer kept for DNS_CACHE_MS (failures are not kept). */
async function defaultResolve(host: string): Promise<Address[]> {
  const addresses = await lookupAll(host);
  if (addresses.length > 0) resolved.set(host, addresses);
  return addresses;
}

function describeNetworkError(error: unknown, host: string): string {
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  const where = e.address ? ` (${e.address}${e.port ? `:${e.port}` : ''})` : '';
  switch (e.code) {
    case 'ECONNREFUSED':
      return `connection refused${where}`;
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `connection reset by the receiver${where}`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `host unreachable${where}`;
    case 'ENOTFOUND':
    case 'EAI_NONAME':
      return `DNS: ${host} does not resolve`;
    case 'EAI_AGAIN':
      return `DNS: lookup of ${host} failed temporarily`;
    default:
      if (e.code?.startsWith('ERR_TLS') || e.code?.includes('CERT') || /certificate|SSL|TLS/i.test(e.message)) {
        return `TLS: ${e.message}`;
      }
      return e.code ? `${e.code}: ${e.message}` : e.message;
  }
}

/** Checks `addresses` of `host` against the address policy and picks the one to connect to, or throws why not. */
function allowedAddress(host: string, addresses: Address[], options: PostOptions): Address {
  if (addresses.length === 0) throw new AttemptError(`DNS: ${host} has no addresses`);
  if (!options.allowPrivateTargets) {
    for (const { address } of addresses) {
      const range = forbiddenRangeOf(address);
      if (range !== null) {
        throw new AttemptError(`refused: ${host} resolves to ${address}, a ${range} address that webhooks may not reach`);
      }
    }
  }
  return addresses[0]!;
}

/**
 * The addresses of `host`: an IP literal as it is, a cached answer at once (no promise), or a
 * lookup raced against the attempt's deadline.
 */
function addressesOf(host: string, options: PostOptions, attempt: Attempt): Address[] | Promise<Address[]> {
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  const family = isIP(literal);
  if (family !== 0) return [{ address: literal, family }];
  if (options.resolve === undefined) {
    const cached = resolved.get(host);
    if (cached !== undefined) return cached;
  }
  return Promise.race([(options.resolve ?? defaultResolve)(host), attempt.deadline()]).catch((error: unknown) => {
    throw error instanceof AttemptError ? error : new AttemptError(describeNetworkError(error, host));
  });
}

function excerptOf(chunks: Buffer[]): string | null {
  if (chunks.length === 0) return null;
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  const text = bytes.toString('utf8', 0, Math.min(bytes.length, EXCERPT_BYTES)).replace(/\0/g, '');
  // Short enough in UTF-16 units, so in characters too; otherwise cut at a character boundary.
  if (text.length <= RESPONSE_EXCERPT_CHARS) return text;
  return [...text].slice(0, RESPONSE_EXCERPT_CHARS).join('').slice(0, RESPONSE_EXCERPT_CHARS);
}

/** One attempt's deadline: its timer, the exchange in flight, and (when DNS is raced against it) a promise. */
class Attempt {
  readonly started = performance.now();
  error: AttemptError | null = null;
  current: Exchange | null = null;
  private readonly timeoutMs: number;
  private readonly timer: NodeJS.Timeout;
  private rejectDeadline: ((error: Error) => void) | null = null;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.timer = setTimeout(() => this.expire(), timeoutMs);
  }

  private expire(): void {
    this.error = new AttemptError(`timeout: no complete response within ${Math.round(this.timeoutMs / 100) / 10} s`);
    this.current?.expire(this.error);
    this.rejectDeadline?.(this.error);
  }

  /** Rejects with the timeout error when the deadline passes (for racing the DNS lookup). */
  deadline(): Promise<never> {
    return new Promise<never>((_resolve, reject) => {
      if (this.error !== null) reject(this.error);
      else this.rejectDeadline = reject;
    });
  }

  /** Sends on one of `pool`'s connections or on a one-off client; settles with the exchange or why it failed. */
  send(via: Connections | Client, options: Dispatcher.DispatchOptions): Promise<Exchange> {
    const exchange = via instanceof Connections ? new Exchange(via, via.acquire()) : new Exchange(null, via);
    this.current = exchange;
    if (this.error !== null) exchange.expire(this.error);
    else exchange.client.dispatch(options, exchange);
    return exchange.done;
  }

  end(partial: Partial<PostResult>): PostResult {
    clearTimeout(this.timer);
    return {
      statusCode: partial.statusCode ?? null,
      headers: partial.headers ?? {},
      excerpt: partial.excerpt ?? null,
      error: partial.error ?? null,
      address: partial.address ?? null,
      latencyMs: Math.round(performance.now() - this.started),
    };
  }
}

/** The request once more on a fresh connection (the reused one was closed by the receiver), closed after it. */
async function sendOnFreshConnection(attempt: Attempt, target: URL, address: Address, options: Dispatcher.DispatchOptions) {
  const client = new Client(target.origin, connectionOptions(address));
  try {
    return await attempt.send(client, options);
  } finally {
    void client.destroy().catch(() => {});
  }
}

/** The first value of a response header that may repeat. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * POSTs `body` to `url` under the rules above. Never throws for the receiver's or the
 * network's behaviour: every outcome is a PostResult (a 3xx has `error` set too).
 */
export async function postWebhook(url: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostResult> {
  const attempt = new Attempt(options.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS);
  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new AttemptError(`unsupported URL scheme ${target.protocol}`);
  } catch (error) {
    return attempt.end({ error: error instanceof AttemptError ? error.message : 'invalid URL' });
  }

  let address: Address | undefined;
  try {
    const addresses = addressesOf(target.hostname, options, attempt);
    address = allowedAddress(target.hostname, Array.isArray(addresses) ? addresses : await addresses, options);
    const request: Dispatcher.DispatchOptions = {
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      headers,
      body,
    };
    const checked = address;
    const response = await attempt.send(connectionsFor(target, checked), request).catch((error: unknown) => {
      // The receiver closed a kept-alive socket just as it was reused: nothing was read, send once more on a new one.
      if (error instanceof ReusedSocketClosed) return sendOnFreshConnection(attempt, target, checked, request);
      throw error;
    });
    const statusCode = response.statusCode;
    let error: string | null = null;
    if (statusCode >= 300 && statusCode < 400) {
      const location = headerValue(response.headers.location);
      error = `redirect (${statusCode}${location ? ` to ${location}` : ''}) not followed: register the final URL`;
    }
    return attempt.end({ statusCode, headers: response.headers, excerpt: excerptOf(response.chunks), error, address: address.address });
  } catch (error) {
    const message = error instanceof AttemptError ? error.message : describeNetworkError(error, target.hostname);
    return attempt.end({ error: message, address: address?.address ?? null });
  }
}

/**
 * The delay a 429 or 503 response asks for (Retry-After in seconds or as an HTTP date), in
 * milliseconds, or null when there is none or it cannot be read.
 */
export function retryAfterMs(statusCode: number | null, headers: IncomingHttpHeaders, now: number = Date.now()): number | null {
  if (statusCode !== 429 && statusCode !== 503) return null;
  const value = headerValue(headers['retry-after']);
  if (typeof value !== 'string' || value.trim() === '') return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
