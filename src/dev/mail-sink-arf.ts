import type { Logger } from '../logger.ts';
import { buildArfReport } from '../modules/sandbox/arf-report.ts';
import type { SinkMessage } from './mail-sink-store.ts';

/**
 * Sends the ARF report for `original` to Herald's inbound SMTP. Failures (no feedback target,
 * refused, down) are logged as warnings and never thrown: the sink must keep running.
 */
export async function sendArfReport(input: {
  original: SinkMessage;
  complainant: string;
  fromAddress: string;
  feedback: { host: string; port: number } | null;
  logger: Logger;
}): Promise<void> {
  const { original, complainant, feedback, logger } = input;
  const fields = { messageId: original.messageId, to: original.mailFrom, complainant };
  if (!feedback) {
    logger.warn('mail sink: complaint@ received but no feedback target is configured; no ARF report sent', fields);
    return;
  }
  if (!original.mailFrom) {
    logger.warn('mail sink: complaint@ received with a null sender (<>); no ARF report sent', fields);
    return;
  }
  // Loaded for the first complaint only: the sink's host process stays smaller without it.
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    host: feedback.host,
    port: feedback.port,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 5000,
    greetingTimeout: 5000,
    socketTimeout: 10_000,
  });
  try {
    const raw = buildArfReport({ original, complainant, fromAddress: input.fromAddress });
    await transport.sendMail({ envelope: { from: input.fromAddress, to: [original.mailFrom] }, raw });
    logger.info('mail sink: ARF complaint report sent', { ...fields, feedback: `${feedback.host}:${feedback.port}` });
  } catch (error) {
    logger.warn('mail sink: could not send the ARF complaint report', { ...fields, feedback: `${feedback.host}:${feedback.port}`, error });
  } finally {
    transport.close();
  }
}
