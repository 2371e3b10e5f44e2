import type { Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type StreamTransport from 'nodemailer/lib/stream-transport/index.js';

/** The SMTP envelope of one transaction. */
export interface Envelope {
  from: string;
  to: string[];
}

let composer: Transporter<StreamTransport.SentMessageInfo> | null = null;

/**
 * A message as nodemailer would put it on the wire (its stream transport: the same MIME
 * composer and DKIM signer as its SMTP transports, CRLF line ends), as bytes. Run on the
 * worker's offload thread, so the RSA signature (most of a message's CPU) and the MIME
 * composition leave the event loop that drives the queue and the relay connections.
 * nodemailer is loaded on first use: the api's offload thread never composes.
 */
export async function composeMessage(message: Mail.Options, envelope: Envelope): Promise<Buffer> {
  if (!composer) {
    const { default: nodemailer } = await import('nodemailer');
    composer = nodemailer.createTransport({
      streamTransport: true,
      buffer: true,
      newline: 'windows',
      disableFileAccess: true,
      disableUrlAccess: true,
    });
  }
  const info = await composer.sendMail({ ...message, envelope: { from: envelope.from, to: envelope.to } });
  return info.message as Buffer;
}

/**
 * Bodies larger than this (most mail is under 100 kB) are composed where they are, streamed by
 * the relay: the composing thread's heap is small on purpose (twenty messages in flight must fit
 * in it), and copying a large body there costs more than it saves.
 */
export const MAX_COMPOSED_ELSEWHERE_CHARS = 256_000;

const lengthOf = (body: Mail.Options['html']) => (typeof body === 'string' ? body.length : body == null ? 0 : Number.POSITIVE_INFINITY);

/**
 * Whether a message can be handed to another thread: no attachments (streams from blob storage,
 * which cannot cross), string bodies of at most MAX_COMPOSED_ELSEWHERE_CHARS together.
 */
export function composableElsewhere(message: Mail.Options): boolean {
  return (
    (message.attachments?.length ?? 0) === 0 &&
    message.raw === undefined &&
    lengthOf(message.html) + lengthOf(message.text) <= MAX_COMPOSED_ELSEWHERE_CHARS
  );
}
