import { join } from 'node:path';
import type { Logger } from '../logger.ts';
import { SIMULATOR_DOMAIN, startMailSink, type MailSink } from './mail-sink.ts';
import { isListening } from './ports.ts';

export const DEFAULT_DEV_RELAY_URL = 'smtp://127.0.0.1:2526';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** How many ports after the preferred one the viewer tries before giving up. */
const VIEWER_PORT_TRIES = 20;

export interface DevRelay {
  /** SMTP_RELAY_URL for the worker. */
  relayUrl: string;
  /** The sink this process started, or null when mail goes to something else. */
  sink: MailSink | null;
  viewerUrl: string | null;
  /** Banner lines describing where outbound mail goes. */
  bannerLines: string[];
}

function masked(url: URL): string {
  const copy = new URL(url.toString());
  if (copy.password) copy.password = '***';
  return copy.toString().replace(/\/$/, '');
}

function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

/**
 * Where the dev stack's outbound mail goes. With SMTP_RELAY_URL unset (or pointing at a free
 * loopback port) `herald dev` runs the mail sink there, with its viewer on `httpPort` or the
 * next free port, persisting to `<dataDir>/mail-sink` and sending complaint reports to
 * Herald's inbound SMTP. A loopback port that already answers (a separate `herald mail-sink`,
 * a local MTA) and any other relay URL are used as they are.
 */
export async function startDevRelay(input: {
  relayUrl: string | undefined;
  httpPort: number;
  dataDir: string;
  inboundSmtpPort: number;
  logger: Logger;
}): Promise<DevRelay> {
  const url = new URL(input.relayUrl ?? DEFAULT_DEV_RELAY_URL);
  const relayUrl = input.relayUrl ?? DEFAULT_DEV_RELAY_URL;
  const port = Number(url.port || 25);
  const external = (note: string): DevRelay => ({
    relayUrl,
    sink: null,
    viewerUrl: null,
    bannerLines: [`  Outbound SMTP ${masked(url)} (${note})`],
  });
  if (url.protocol !== 'smtp:' || !LOOPBACK.has(url.hostname)) return external('SMTP_RELAY_URL; no mail sink: mail really goes out');
  const host = url.hostname === 'localhost' ? '127.0.0.1' : url.hostname.replace(/^\[|\]$/g, '');
  if (await isListening(host, port)) return external('already listening, used as is; the mail sink was not started');

  let lastError: unknown;
  for (let httpPort = input.httpPort; httpPort < input.httpPort + VIEWER_PORT_TRIES && httpPort <= 65535; httpPort++) {
    try {
      const sink = await startMailSink({
        host,
        smtpPort: port,
        httpPort,
        dir: join(input.dataDir, 'mail-sink'),
        feedback: { host: '127.0.0.1', port: input.inboundSmtpPort },
        logger: input.logger,
      });
      const bracketed = host.includes(':') ? `[${host}]` : host;
      const viewerUrl = `http://${bracketed}:${sink.httpPort}`;
      // `localhost` may resolve to ::1 first while the sink listens on 127.0.0.1.
      const sinkUrl = new URL(url.toString());
      sinkUrl.hostname = bracketed;
      return {
        relayUrl: sinkUrl.toString().replace(/\/$/, ''),
        sink,
        viewerUrl,
        bannerLines: [
          `  Mail sink     ${viewerUrl} (outbound relay ${masked(sinkUrl)}; nothing leaves this machine)`,
          `                test addresses: delivered@ bounce@ softbounce@ complaint@ suppressed@ reject@ ${SIMULATOR_DOMAIN}`,
        ],
      };
    } catch (error) {
      if (!isAddressInUse(error)) throw error;
      lastError = error;
      if (await isListening(host, port)) throw new Error(`port ${port} of SMTP_RELAY_URL became busy while starting the mail sink`);
    }
  }
  throw new Error(`no free port for the mail sink viewer from ${input.httpPort}: ${String(lastError)}`);
}
