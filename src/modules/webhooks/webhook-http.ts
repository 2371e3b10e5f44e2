import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { LRUCache } from 'lru-cache';
import { forbiddenRangeOf } from '../../net/address-policy.ts';

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
 * - connections are kept alive per (scheme, host, port, checked address): a pooled socket was
 *   opened to an address that passed the check, so reusing it cannot reach anything else; an idle
 *   socket closes after KEEP_ALIVE_IDLE_MS, and a request that finds its reused socket already
 *   closed by the receiver is sent once more on a fresh one;
 * - a host name's checked answer is reused for DNS_CACHE_MS (the check runs on every use).
 */

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 15_000;
export const MAX_RESPONSE_READ_BYTES = 64 * 1024;
export const RESPONSE_EXCERPT_CHARS = 1024;

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
/** How long an idle kept-alive connection stays open (below the usual 5 s server keep-alive). */
export const KEEP_ALIVE_IDLE_MS = 4_000;

const resolved = new LRUCache<string, { address: string; family: number }[]>({ max: 10_000, ttl: DNS_CACHE_MS });
/** node:dns lookups, each host's answer kept for DNS_CACHE_MS (failures are not kept). */
async function defaultResolve(host: string): Promise<{ address: string; family: number }[]> {
  const cached = resolved.get(host);
  if (cached !== undefined) return cached;
  const addresses = await lookupAll(host);
  if (addresses.length > 0) resolved.set(host, addresses);
  return addresses;
}

/** Kept-alive agents, one per scheme, host, port and checked address (so a pooled socket only ever reaches that address). */
const agents = new LRUCache<string, HttpAgent>({ max: 2_000, dispose: (agent) => agent.destroy() });
function agentFor(target: URL, address: { address: string; family: number }): HttpAgent {
  const key = `${target.protocol}//${target.host}|${address.address}`;
  let agent = agents.get(key);
  if (agent === undefined) {
    const options = { keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, lookup: pinnedLookup(address.address, address.family) };
    agent = target.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    agents.set(key, agent);
  }
  return agent;
}

/** A refused or failed attempt, with the text stored in the attempt's `error`. */
class AttemptError extends Error {}

function describeNetworkError(error: unknown, host: string): string {
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  const where = e.address ? ` (${e.address}${e.port ? `:${e.port}` : ''})` : '';
  switch (e.code) {
    case 'ECONNREFUSED':
      return `connection refused${where}`;
    case 'ECONNRESET':
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

/** Resolves `host` (IP literals as they are) and picks the address to connect to, or throws why not. */
async function checkedAddress(host: string, options: PostOptions, deadline: Promise<never>): Promise<{ address: string; family: number }> {
  const literal = host.replace(/^\[(.*)\]$/, '$1');
  let addresses: { address: string; family: number }[];
  if (isIP(literal)) {
    addresses = [{ address: literal, family: isIP(literal) }];
  } else {
    try {
      addresses = await Promise.race([(options.resolve ?? defaultResolve)(host), deadline]);
    } catch (error) {
      if (error instanceof AttemptError) throw error;
      throw new AttemptError(describeNetworkError(error, host));
    }
    if (addresses.length === 0) throw new AttemptError(`DNS: ${host} has no addresses`);
  }
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

/** A `lookup` for node:net that answers every query with the checked address. */
function pinnedLookup(address: string, family: number): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as LookupFunction;
}

function excerptOf(chunks: Buffer[]): string | null {
  if (chunks.length === 0) return null;
  const text = Buffer.concat(chunks)
    .subarray(0, RESPONSE_EXCERPT_CHARS * 4)
    .toString('utf8')
    .replace(/\0/g, '');
  // Short enough in UTF-16 units, so in characters too; otherwise cut at a character boundary.
  if (text.length <= RESPONSE_EXCERPT_CHARS) return text;
  return [...text].slice(0, RESPONSE_EXCERPT_CHARS).join('').slice(0, RESPONSE_EXCERPT_CHARS);
}

/** A reused kept-alive socket that the receiver had closed before any answer. */
class ReusedSocketClosed extends Error {}

type Exchange = { statusCode: number; headers: IncomingHttpHeaders; chunks: Buffer[] };

/**
 * The attempt's deadline as the request sees it: once it passes, the request in flight is
 * destroyed with the deadline's error (cheaper per request than an AbortSignal's listeners).
 */
interface Deadline {
  error: Error | null;
  current: ClientRequest | null;
}

/** One request and its response (at most MAX_RESPONSE_READ_BYTES of the body read). */
function exchangeOnce(send: typeof httpRequest, options: RequestOptions, payload: Buffer, deadline: Deadline): Promise<Exchange> {
  return new Promise<Exchange>((resolve, reject) => {
    let answered = false;
    const fail = (error: unknown) => reject(deadline.error ?? (error as Error));
    const req = send(options, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let read = 0;
      const finish = () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, chunks });
      res.on('data', (chunk: Buffer) => {
        if (read >= MAX_RESPONSE_READ_BYTES) return;
        chunks.push(chunk.subarray(0, MAX_RESPONSE_READ_BYTES - read));
        read += chunk.length;
        if (read >= MAX_RESPONSE_READ_BYTES) {
          // Enough for the record: stop reading and drop the connection.
          finish();
          res.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete && read < MAX_RESPONSE_READ_BYTES)
          fail(new AttemptError('the receiver closed the connection before the response was complete'));
      });
    });
    deadline.current = req;
    req.on('error', (error: NodeJS.ErrnoException) => {
      const closedIdle = req.reusedSocket && !answered && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      fail(closedIdle && deadline.error === null ? new ReusedSocketClosed(error.message) : error);
    });
    if (deadline.error !== null) req.destroy(deadline.error);
    req.end(payload);
  });
}

/**
 * POSTs `body` to `url` under the rules above. Never throws for the receiver's or the
 * network's behaviour: every outcome is a PostResult (a 3xx has `error` set too).
 */
export async function postWebhook(url: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const expiry: Deadline = { error: null, current: null };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new AttemptError(`timeout: no complete response within ${Math.round(timeoutMs / 100) / 10} s`);
      expiry.error = error;
      expiry.current?.destroy(error);
      reject(error);
    }, timeoutMs);
  });
  deadline.catch(() => {});
  const result = (partial: Partial<PostResult>): PostResult => ({
    statusCode: null,
    headers: {},
    excerpt: null,
    error: null,
    address: null,
    ...partial,
    latencyMs: Math.round(performance.now() - started),
  });

  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new AttemptError(`unsupported URL scheme ${target.protocol}`);
  } catch (error) {
    clearTimeout(timer);
    return result({ error: error instanceof AttemptError ? error.message : 'invalid URL' });
  }

  let address: { address: string; family: number } | undefined;
  try {
    address = await checkedAddress(target.hostname, options, deadline);
    const payload = Buffer.from(body, 'utf8');
    const requestOptions: RequestOptions = {
      method: 'POST',
      protocol: target.protocol,
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port || undefined,
      path: `${target.pathname}${target.search}`,
      headers: { ...headers, 'Content-Length': String(payload.length) },
      lookup: pinnedLookup(address.address, address.family),
      agent: agentFor(target, address),
    };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const exchange = exchangeOnce(send, requestOptions, payload, expiry).catch((error: unknown) => {
      // The receiver closed a kept-alive socket just as it was reused: nothing was read, send once more on a new one.
      if (error instanceof ReusedSocketClosed) return exchangeOnce(send, { ...requestOptions, agent: false }, payload, expiry);
      throw error;
    });
    const response = await Promise.race([exchange, deadline]);
    clearTimeout(timer);
    const statusCode = response.statusCode;
    let error: string | null = null;
    if (statusCode >= 300 && statusCode < 400) {
      const location = response.headers.location;
      error = `redirect (${statusCode}${location ? ` to ${location}` : ''}) not followed: register the final URL`;
    }
    return result({ statusCode, headers: response.headers, excerpt: excerptOf(response.chunks), error, address: address.address });
  } catch (error) {
    clearTimeout(timer);
    const message = error instanceof AttemptError ? error.message : describeNetworkError(error, target.hostname);
    return result({ error: message, address: address?.address ?? null });
  }
}

/**
 * The delay a 429 or 503 response asks for (Retry-After in seconds or as an HTTP date), in
 * milliseconds, or null when there is none or it cannot be read.
 */
export function retryAfterMs(statusCode: number | null, headers: IncomingHttpHeaders, now: number = Date.now()): number | null {
  if (statusCode !== 429 && statusCode !== 503) return null;
  const value = headers['retry-after'];
  if (typeof value !== 'string' || value.trim() === '') return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
