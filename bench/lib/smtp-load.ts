import { connect, type Socket } from 'node:net';

/** Reads SMTP replies (multi-line `250-…` continued until `250 …`) from a socket. */
function replyReader(socket: Socket): () => Promise<number> {
  let buffer = '';
  const waiting: ((code: number) => void)[] = [];
  const ready: number[] = [];
  let current: string[] = [];
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    let end: number;
    while ((end = buffer.indexOf('\r\n')) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      current.push(line);
      if (line[3] !== '-') {
        const code = Number(line.slice(0, 3));
        current = [];
        const waiter = waiting.shift();
        if (waiter) waiter(code);
        else ready.push(code);
      }
    }
  });
  return () => {
    const code = ready.shift();
    return code !== undefined ? Promise.resolve(code) : new Promise((resolve) => waiting.push(resolve));
  };
}

/**
 * One SMTP session against the inbound listener: EHLO, MAIL, RCPT, DATA with a small message
 * (whatever the server answers to each: 250, 451 while ingestion is not wired in, 550), QUIT.
 * Returns the reply to the end of DATA (or to RCPT when DATA was not reached).
 */
export function smtpSession(port: number, recipient: string, n: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(30_000, () => socket.destroy(new Error('SMTP session timed out')));
    socket.once('error', reject);
    const next = replyReader(socket);
    const send = async (line: string) => {
      socket.write(`${line}\r\n`);
      return next();
    };
    void (async () => {
      await next();
      await send('EHLO bench.example.com');
      await send('MAIL FROM:<sender@example.com>');
      const rcpt = await send(`RCPT TO:<${recipient}>`);
      let last = rcpt;
      if (rcpt < 400 && (await send('DATA')) === 354) {
        const message = [
          'From: Sender <sender@example.com>',
          `To: <${recipient}>`,
          `Subject: bench message ${n}`,
          `Message-ID: <bench-${n}-${Date.now()}@example.com>`,
          'Content-Type: text/plain; charset=utf-8',
          '',
          'Hello from the footprint benchmark.',
          '.',
        ].join('\r\n');
        last = await send(message);
      }
      await send('QUIT');
      socket.end();
      resolve(last);
    })().catch(reject);
  });
}

/** `concurrency` sessions back to back until `durationSec` is over; returns the sessions run. */
export async function smtpLoad(port: number, recipient: string, concurrency: number, durationSec: number): Promise<number> {
  const deadline = performance.now() + durationSec * 1000;
  let sessions = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) await smtpSession(port, recipient, (sessions += 1));
    }),
  );
  return sessions;
}
