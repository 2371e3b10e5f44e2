import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { composeMessage } from '../../src/modules/outbound/message-composer.ts';
import { median } from './stats.ts';

const ENVELOPE = { from: 'bounce@bounces.example.com', to: ['reader@example.net'] };

/**
 * CPU ms of this process per message composed and DKIM-signed (RSA-2048): Herald's composer
 * (what the relay thread runs per message) against nodemailer's stream transport given the same
 * options, which parses the PEM key on every message. The two alternate in rounds, so load from
 * elsewhere falls on both alike; the median round of each.
 */
export async function composeCost(privateKey: string, domain: string, perRound: number): Promise<{ herald: number; plain: number }> {
  const plain = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const message = (i: number): Mail.Options => ({
    from: { name: 'Bench', address: `bench@${domain}` },
    to: [`delivered+${i}@simulator.herald.test`],
    subject: 'Bench',
    text: 'Hello from the benchmark.',
    html: '<p>Hello from the benchmark.</p>',
    messageId: `<compose-${i}@${domain}>`,
    dkim: { domainName: domain, keySelector: 'herald', privateKey },
  });
  const round = async (compose: (i: number) => Promise<unknown>): Promise<number> => {
    const before = process.cpuUsage();
    for (let i = 0; i < perRound; i += 1) await compose(i);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000 / perRound;
  };
  const herald: number[] = [];
  const baseline: number[] = [];
  for (let r = 0; r < 6; r += 1) {
    // The first round of each warms the code up and is not counted.
    const h = await round((i) => composeMessage(message(i), ENVELOPE));
    const p = await round((i) => plain.sendMail({ ...message(i), envelope: ENVELOPE }));
    if (r === 0) continue;
    herald.push(h);
    baseline.push(p);
  }
  plain.close();
  return { herald: median(herald), plain: median(baseline) };
}
