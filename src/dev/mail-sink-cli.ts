import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDevEnv } from '../config.ts';
import { createLogger } from '../logger.ts';
import { onShutdown } from '../shutdown.ts';
import { SIMULATOR_DOMAIN, startMailSink } from './mail-sink.ts';
import { dataDir } from './paths.ts';

export const MAIL_SINK_USAGE = `usage: herald mail-sink [options]

The development mail sink on its own: an SMTP server that keeps every message (the
"internet" of a dev or test setup), with the mailbox simulator at ${SIMULATOR_DOMAIN}
and a viewer page. See docs/mail-sink.md.

  --host H                 listen address (default 127.0.0.1)
  --smtp-port N            SMTP port (default 2526; 0 = any free port)
  --http-port N            viewer port (default MAIL_SINK_HTTP_PORT or 8025; 0 = any free port)
  --no-http                no viewer
  --dir D                  keep messages as D/<id>.eml (default .data/mail-sink)
  --memory                 keep messages in memory only
  --feedback H:P           Herald's inbound SMTP, for complaint@ reports (default 127.0.0.1:SMTP_PORT or 2525)
  --no-feedback            send no complaint reports
  --soft-bounce-attempts N 451 replies before softbounce@ is accepted (default 2)
`;

function portArg(name: string, value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new Error(`--${name}: "${value}" is not a port number`);
  return Number(value);
}

/** `herald mail-sink`: runs the sink in this process until Ctrl-C. */
export async function runMailSink(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      'smtp-port': { type: 'string', default: '2526' },
      'http-port': { type: 'string' },
      'no-http': { type: 'boolean', default: false },
      dir: { type: 'string' },
      memory: { type: 'boolean', default: false },
      feedback: { type: 'string' },
      'no-feedback': { type: 'boolean', default: false },
      'soft-bounce-attempts': { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(MAIL_SINK_USAGE);
    return;
  }
  const env = loadDevEnv();
  let feedback: { host: string; port: number } | null = null;
  if (!values['no-feedback']) {
    const target = values.feedback ?? `127.0.0.1:${env.SMTP_PORT}`;
    const match = /^(.+):(\d{1,5})$/.exec(target);
    if (!match) throw new Error(`--feedback: "${target}" is not host:port`);
    feedback = { host: match[1]!.replace(/^\[|\]$/g, ''), port: portArg('feedback', match[2]!) };
  }
  const attempts = values['soft-bounce-attempts'];
  if (!/^\d+$/.test(attempts)) throw new Error(`--soft-bounce-attempts: "${attempts}" is not a whole number`);

  const logger = createLogger('info', { service: 'herald-mail-sink' });
  const sink = await startMailSink({
    host: values.host,
    smtpPort: portArg('smtp-port', values['smtp-port']),
    httpPort: values['no-http']
      ? null
      : values['http-port'] !== undefined
        ? portArg('http-port', values['http-port'])
        : env.MAIL_SINK_HTTP_PORT,
    dir: values.memory ? null : (values.dir ?? join(dataDir(env), 'mail-sink')),
    softBounceAttempts: Number(attempts),
    feedback,
    logger,
  });
  onShutdown(logger, () => sink.close());
  const viewerHost = values.host.includes(':') ? `[${values.host}]` : values.host;
  logger.info('mail sink listening', {
    smtp: `smtp://${viewerHost}:${sink.smtpPort}`,
    viewer: sink.httpPort === null ? null : `http://${viewerHost}:${sink.httpPort}`,
    simulatorDomain: SIMULATOR_DOMAIN,
    feedback: feedback ? `${feedback.host}:${feedback.port}` : null,
  });
}
