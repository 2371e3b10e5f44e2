import { createPrivateKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
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
 * DKIM keys parsed once per thread, by their PEM text: parsing a PKCS#8 PEM costs more than the
 * RSA-2048 signature itself (about 0.35 ms against 0.25 ms), and nodemailer would parse the
 * string on every message. Each is kept until a minute after its last use, so a rotated or
 * removed domain's key leaves memory soon after its last message. A PEM that does not parse is
 * left as it is, so nodemailer treats it as before.
 */
const parsedKeys = new LRUCache<string, KeyObject>({ max: 1_000, ttl: 60_000, updateAgeOnGet: true });

function parsedKeyOf(pem: string): KeyObject | null {
  const cached = parsedKeys.get(pem);
  if (cached) return cached;
  try {
    const key = createPrivateKey(pem);
    parsedKeys.set(pem, key);
    return key;
  } catch {
    return null;
  }
}

/** The message with its DKIM key (one key given as a PEM string) replaced by the parsed key. */
function withParsedDkimKey(message: Mail.Options): Mail.Options {
  const dkim = message.dkim;
  if (!dkim || !('privateKey' in dkim) || typeof dkim.privateKey !== 'string') return message;
  const key = parsedKeyOf(dkim.privateKey);
  // nodemailer hands privateKey straight to crypto's sign(), which takes a KeyObject as well.
  return key ? { ...message, dkim: { ...dkim, privateKey: key as unknown as string } } : message;
}

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
  const info = await composer.sendMail({ ...withParsedDkimKey(message), envelope: { from: envelope.from, to: envelope.to } });
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
