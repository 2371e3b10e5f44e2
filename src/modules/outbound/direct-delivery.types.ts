import type { DnsResolver } from '../../dns/resolver.ts';
import type { Logger } from '../../logger.ts';
import type { RelayTlsSettings } from '../../smtp/tls-policy.ts';
import type { MtaSts } from './mta-sts.ts';
import type { DestinationShaper } from './shaping/destination-shaper.ts';

/** The settings of direct-to-MX delivery (SMTP_DELIVERY=direct). */
export interface DirectDeliveryOptions {
  dns: Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>;
  /** The name given in EHLO (SMTP_HELO_NAME). */
  heloName: string;
  /** The port of every MX host (25). */
  port: number;
  /** Connections to one destination host at most. */
  poolSize: number;
  /** Messages per minute to one destination host at most (0: no limit). */
  ratePerMinute: number;
  tls: RelayTlsSettings;
  logger: Logger;
  /** Destination hosts tried per domain, in preference order. */
  maxHosts?: number;
  /** MTA-STS policies to honour (null: off). */
  mtaSts?: MtaSts | null;
  /** The trusted certificate authorities (PEM) for hosts whose certificate is verified; Node's public roots when absent. */
  ca?: string[];
  /** SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: MX addresses in the address policy's forbidden ranges are tried too (tests, private networks). */
  allowPrivateTargets: boolean;
  /** Per-destination limits shared by the workers (shaping/destination-shaper.ts); null or absent: none. */
  shaper?: DestinationShaper | null;
  /** The source address every connection binds to (an egress pool's); the OS chooses when absent. */
  localAddress?: string;
}
