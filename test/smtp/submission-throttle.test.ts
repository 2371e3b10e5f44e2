import { connect, type Socket } from 'node:net';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import type { RunningSmtp } from '../../src/smtp/inbound-server.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The submission front door against key guessing and connection hoarding (issue 30): failed
 * AUTH counted per user name and per client address (Redis), then 421 4.7.0 and the connection
 * closed, the right key included; a cap on one address's connections. Every client here is
 * 127.0.0.1, so the tests run in order: the cap first (no failures yet), then a user name's
 * lockout, then the address's, which ends the file's use of this server.
 */
describe('SMTP submission: AUTH lockout and connection cap', () => {
  let stack: TestStack;
  let smtp: RunningSmtp;
  let key: string;
  const limits = { failuresPerUser: 3, failuresPerAddress: 6, connectionsPerAddress: 3 };
  const auth = (user: string, pass: string) =>
    createTransport({
      host: '127.0.0.1',
      port: smtp.submissionPort!,
      secure: false,
      ignoreTLS: true,
      connectionTimeout: 5_000,
      greetingTimeout: 5_000,
      auth: { user, pass },
    }).verify();
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => ({ responseCode: 0, response: 'accepted' }),
      (error: { responseCode?: number; response?: string; message: string }) => ({
        responseCode: error.responseCode ?? 0,
        response: error.response ?? error.message,
      }),
    );

  /** A raw connection and its first line (the greeting, or the refusal). */
  const open = (port: number) =>
    new Promise<{ socket: Socket; line: string; closed: Promise<void> }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.includes('\r\n')) resolve({ socket, line: text.split('\r\n')[0]!, closed });
      });
      socket.once('error', reject);
    });

  beforeAll(async () => {
    stack = await createTestStack();
    key = (await createOrgWithKey(stack.orm, { scopes: ['outbox.transactional:send'] })).key;
    smtp = await startSmtp(stack.config, createLogger('silent'), { submissionLimits: limits });
  }, 60_000);
  afterAll(async () => {
    await smtp?.close();
    await stack?.close();
  });

  it('answers 421 to a client address past its open connections, and takes it again once one closes', async () => {
    const held = await Promise.all([1, 2, 3].map(() => open(smtp.submissionPort!)));
    for (const connection of held) expect(connection.line).toMatch(/^220 /);
    const refused = await open(smtp.submissionPort!);
    expect(refused.line).toMatch(/^421 4\.7\.0 /);
    await refused.closed;
    held[0]!.socket.end('QUIT\r\n');
    await held[0]!.closed;
    const again = await open(smtp.submissionPort!);
    expect(again.line).toMatch(/^220 /);
    for (const connection of [...held.slice(1), again]) connection.socket.destroy();
  });

  it('locks a user name after 3 failures (421 4.7.0, connection closed), even for the right key; other names still sign in', async () => {
    expect(await failure(auth('victim', 'hrld_live_guess1'))).toMatchObject({ responseCode: 535 });
    expect(await failure(auth('VICTIM', 'hrld_live_guess2'))).toMatchObject({ responseCode: 535 });
    const third = await failure(auth('victim', 'hrld_live_guess3'));
    expect(third.responseCode, third.response).toBe(421);
    expect(third.response).toContain('4.7.0');
    const rightKey = await failure(auth('victim', key));
    expect(rightKey.responseCode, rightKey.response).toBe(421);
    await expect(auth('someone-else', key)).resolves.toBe(true);
  });

  it('locks the client address after its failures under any names: 421 at AUTH, then at connection', async () => {
    // 3 failures so far from this address (the test above); 3 more under fresh names reach 6.
    expect(await failure(auth('a', 'hrld_live_guess4'))).toMatchObject({ responseCode: 535 });
    expect(await failure(auth('b', 'hrld_live_guess5'))).toMatchObject({ responseCode: 535 });
    expect(await failure(auth('c', 'hrld_live_guess6'))).toMatchObject({ responseCode: 421 });
    const greeting = await open(smtp.submissionPort!);
    expect(greeting.line).toMatch(/^421 4\.7\.0 /);
    await greeting.closed;
    const rightKey = await failure(auth('d', key));
    expect(rightKey.responseCode, rightKey.response).toBe(421);
  });
});
