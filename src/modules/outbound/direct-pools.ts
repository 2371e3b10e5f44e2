import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import type { DirectDeliveryOptions } from './direct-delivery.types.ts';
import { buildTransportTls, createTlsFailureLog, type TlsFailureLog } from './relay-tls.ts';

/** Open pools kept at most; the least recently used is closed past it. */
const POOLS_MAX = 500;

/** One destination address's nodemailer pool with the TLS it was opened with. */
export interface DirectPool {
  transport: Transporter;
  tls: RelayTlsSettings;
  tlsFailures: TlsFailureLog;
}

type PoolOptions = Pick<
  DirectDeliveryOptions,
  'tls' | 'ca' | 'port' | 'heloName' | 'localAddress' | 'poolSize' | 'ratePerMinute' | 'logger'
>;

/** The TLS a host gets: verified against its name (SMTP_DIRECT_TLS=verify, or an enforced MTA-STS policy), else the configured policy. */
function tlsFor(options: PoolOptions, host: { name: string }, verify: boolean) {
  const settings: RelayTlsSettings = verify ? { policy: 'verify', source: 'host' } : options.tls;
  const transport = buildTransportTls(settings, false);
  const ca = verify && options.ca ? { ca: options.ca } : {};
  return { settings, transport: { ...transport, tls: { ...transport.tls, servername: host.name, ...ca } } };
}

/** A new pool to one host (at most `poolSize` connections, `ratePerMinute` messages, EHLO as `heloName`). */
function openPool(options: PoolOptions, host: { name: string; address: string }, verify: boolean): DirectPool {
  const tls = tlsFor(options, host, verify);
  const transport = nodemailer.createTransport({
    pool: true,
    host: host.address,
    port: options.port,
    name: options.heloName,
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    ...tls.transport,
    maxConnections: options.poolSize,
    maxMessages: 100,
    ...(options.ratePerMinute > 0 ? { rateDelta: 60_000, rateLimit: options.ratePerMinute } : {}),
    connectionTimeout: 30_000,
    greetingTimeout: 30_000,
    socketTimeout: 60_000,
    disableFileAccess: true,
    disableUrlAccess: true,
  } satisfies SMTPPool.Options);
  return {
    transport,
    tls: tls.settings,
    tlsFailures: createTlsFailureLog(options.logger, {
      address: `${host.name} [${host.address}]:${options.port}`,
      settings: tls.settings,
    }),
  };
}

/** The direct relay's pools, one per destination address, host name and TLS policy; least recently used closed past POOLS_MAX. */
export function createDirectPools(options: PoolOptions) {
  const pools = new Map<string, DirectPool>();
  return {
    poolFor(host: { name: string; address: string }, verify: boolean): DirectPool {
      const key = `${host.address}|${host.name}|${verify ? 'verify' : options.tls.policy}`;
      const found = pools.get(key);
      if (found) {
        pools.delete(key);
        pools.set(key, found);
        return found;
      }
      if (pools.size >= POOLS_MAX) {
        const [oldest, pool] = pools.entries().next().value!;
        pools.delete(oldest);
        pool.transport.close();
      }
      const pool = openPool(options, host, verify);
      pools.set(key, pool);
      return pool;
    },
    close(): void {
      for (const pool of pools.values()) pool.transport.close();
      pools.clear();
    },
  };
}

export type DirectPools = ReturnType<typeof createDirectPools>;
