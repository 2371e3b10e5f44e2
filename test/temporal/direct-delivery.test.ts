import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { Resolver } from 'node:dns/promises';
import { createServer, type Server } from 'node:https';
import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Event, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { freePort } from '../../src/dev/ports.ts';
import { createLogger } from '../../src/logger.ts';
import { expectedRecords } from '../../src/modules/domains/deliverability.fns.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { messageProblems } from '../support/message-quality.ts';
import { createTestCertificates, type TestCertificate } from '../support/test-certificates.ts';

interface Received {
  server: string;
  raw: Buffer;
  remoteAddress: string;
  helo: string;
  secure: boolean;
  from: string;
  to: string[];
  messageId: string;
  subject: string;
}

type EmailRecord = {
  _id: string;
  status: string;
  recipients: { email: string; status: string; attempts: number; last_response: string | null }[];
};

/**
 * A remote MX on a 127.0.0.x address: records what it accepts (with the EHLO name and whether
 * STARTTLS was used), refuses `nobody@` at RCPT with 550, with `greylist` answers 451 to a
 * recipient's first RCPT and 250 afterwards, and with `refuseFirstConnection` answers its first
 * connection 421.
 */
async function startMx(
  host: string,
  port: number,
  options: { greylist?: boolean; certificate?: TestCertificate; refuseFirstConnection?: boolean } = {},
) {
  const received: Received[] = [];
  const connections: string[] = [];
  const seen = new Set<string>();
  const server = new SMTPServer({
    authOptional: true,
    disableReverseLookup: true,
    closeTimeout: 500,
    onConnect(session, callback) {
      connections.push(session.remoteAddress);
      if (options.refuseFirstConnection && connections.length === 1)
        callback(Object.assign(new Error('4.7.0 too busy, try again later'), { responseCode: 421 }));
      else callback();
    },
    ...(options.certificate ? { key: options.certificate.key, cert: options.certificate.cert } : {}),
    onRcptTo(address, _session, callback) {
      const rcpt = address.address.toLowerCase();
      if (rcpt.startsWith('nobody@')) {
        const error = Object.assign(new Error('5.1.1 no such user here'), { responseCode: 550 });
        callback(error);
        return;
      }
      if (options.greylist && !seen.has(rcpt)) {
        seen.add(rcpt);
        callback(Object.assign(new Error('4.7.1 greylisted, try again later'), { responseCode: 451 }));
        return;
      }
      callback();
    },
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        void simpleParser(raw).then((parsed) => {
          received.push({
            server: host,
            raw,
            remoteAddress: session.remoteAddress,
            helo: session.hostNameAppearsAs,
            secure: session.secure,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            messageId: parsed.messageId ?? '',
            subject: parsed.subject ?? '',
          });
          callback(null, 'queued as remote');
        }, callback);
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { received, connections, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * SMTP_DELIVERY=direct end to end over loopback: a DNS server on 127.0.0.1 publishes MX and A
 * records pointing at SMTP servers on 127.0.0.2–5; Herald's worker looks them up, delivers per
 * recipient domain, and records each recipient's own outcome.
 */
describe('direct-to-MX delivery (DNS on loopback, remote MX hosts on 127.0.0.x)', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let dns: TestDnsServer;
  let mx: Awaited<ReturnType<typeof startMx>>[];
  let sendingDomain: string;
  let certificates: ReturnType<typeof createTestCertificates>;
  let policyServer: Server;

  beforeAll(async () => {
    const port = await freePort();
    certificates = createTestCertificates();
    const authority = certificates.authority('Herald test CA');
    mx = [
      await startMx('127.0.0.2', port),
      await startMx('127.0.0.3', port),
      await startMx('127.0.0.5', port, { greylist: true }),
      // The one host sts.test's MTA-STS policy names, with a certificate for its name.
      await startMx('127.0.0.7', port, { certificate: authority.issue(['DNS:mx-good.sts.test']) }),
      await startMx('127.0.0.9', port, { refuseFirstConnection: true }),
    ];
    // The MTA-STS policy hosts of sts.test and sts-bad.test, over HTTPS with certificates of the test CA.
    const policies: Record<string, string> = {
      'mta-sts.sts.test': 'version: STSv1\r\nmode: enforce\r\nmx: mx-good.sts.test\r\nmax_age: 86400\r\n',
      'mta-sts.sts-bad.test': 'version: STSv1\nmode: enforce\nmx: *.elsewhere.test\nmax_age: 86400\n',
      'mta-sts.sts-self.test': 'version: STSv1\nmode: enforce\nmx: *.sts-self.test\nmax_age: 86400\n',
    };
    const policyCert = authority.issue(['DNS:mta-sts.sts.test', 'DNS:mta-sts.sts-bad.test', 'DNS:mta-sts.sts-self.test']);
    policyServer = createServer({ key: policyCert.key, cert: policyCert.cert }, (req, res) => {
      const policy = req.url === '/.well-known/mta-sts.txt' ? policies[(req.headers.host ?? '').toLowerCase()] : undefined;
      res.writeHead(policy ? 200 : 404, { 'content-type': 'text/plain' }).end(policy ?? 'not found');
    });
    const policyPort = await freePort();
    await new Promise<void>((resolve) => policyServer.listen(policyPort, '127.0.0.8', resolve));
    dns = await startDnsServer({
      'one.test': {
        MX: [
          { exchange: 'mx1.one.test', priority: 10 },
          { exchange: 'mx2.one.test', priority: 20 },
        ],
      },
      'mx1.one.test': { A: ['127.0.0.2'] },
      'mx2.one.test': { A: ['127.0.0.3'] },
      // No MX: the domain's own address receives its mail (RFC 5321 implicit MX).
      'implicit.test': { A: ['127.0.0.3'] },
      'nullmx.test': { MX: [{ exchange: '.', priority: 0 }] },
      // The preferred host does not listen: the next one takes the message.
      'failover.test': {
        MX: [
          { exchange: 'down.failover.test', priority: 5 },
          { exchange: 'up.failover.test', priority: 50 },
        ],
      },
      'down.failover.test': { A: ['127.0.0.4'] },
      'up.failover.test': { A: ['127.0.0.2'] },
      'grey.test': { MX: [{ exchange: 'mx.grey.test', priority: 10 }] },
      'mx.grey.test': { A: ['127.0.0.5'] },
      // Answers its first connection 421: the destination backs off (SMTP_DESTINATION_BACKOFF), then accepts.
      'busy.test': { MX: [{ exchange: 'mx.busy.test', priority: 10 }] },
      'mx.busy.test': { A: ['127.0.0.9'] },
      'dead.test': { MX: [{ exchange: 'mx.dead.test', priority: 10 }] },
      'mx.dead.test': { A: ['127.0.0.6'] },
      // MTA-STS: the preferred MX (127.0.0.2, a self-signed certificate) is not in the policy.
      'sts.test': {
        MX: [
          { exchange: 'mx.sts.test', priority: 10 },
          { exchange: 'mx-good.sts.test', priority: 20 },
        ],
      },
      'mx.sts.test': { A: ['127.0.0.2'] },
      'mx-good.sts.test': { A: ['127.0.0.7'] },
      '_mta-sts.sts.test': { TXT: ['v=STSv1; id=20261125'] },
      'mta-sts.sts.test': { A: ['127.0.0.8'] },
      'sts-bad.test': { MX: [{ exchange: 'mx.sts-bad.test', priority: 10 }] },
      'mx.sts-bad.test': { A: ['127.0.0.2'] },
      '_mta-sts.sts-bad.test': { TXT: ['v=STSv1; id=1'] },
      'mta-sts.sts-bad.test': { A: ['127.0.0.8'] },
      // Named by its policy, but its certificate (smtp-server's own, self-signed) does not verify.
      'sts-self.test': { MX: [{ exchange: 'mx.sts-self.test', priority: 10 }] },
      'mx.sts-self.test': { A: ['127.0.0.2'] },
      '_mta-sts.sts-self.test': { TXT: ['v=STSv1; id=7'] },
      'mta-sts.sts-self.test': { A: ['127.0.0.8'] },
    });
    h = await startApiHarness(
      {
        SMTP_DELIVERY: 'direct',
        SMTP_DIRECT_PORT: String(port),
        SMTP_HELO_NAME: 'mta.herald.test',
        SMTP_MTA_STS_PORT: String(policyPort),
        SMTP_DIRECT_CA_FILE: authority.certFile,
        DNS_SERVERS: dns.address,
        EMAIL_RETRY_SCHEDULE: '0s,300ms',
        EMAIL_RETRY_WINDOW: '8s',
        // Longer than the retry delay: a retry while the destination backs off is a hold.
        SMTP_DESTINATION_BACKOFF: '3s',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    sendingDomain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
    await setCredits(h.stack.orm, h.workspace.org.id, 100);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    for (const server of mx ?? []) await server.close();
    await dns?.close();
    await new Promise<void>((resolve) => (policyServer ? policyServer.close(() => resolve()) : resolve()));
    certificates?.remove();
  });

  async function send(to: string[], subject: string): Promise<string> {
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${sendingDomain}`, to, subject, text: 'Hello over direct delivery' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    return (response.body.data as EmailRecord)._id;
  }

  async function settled(id: string): Promise<EmailRecord> {
    return waitFor(
      `email ${id} to settle`,
      async () => {
        const email = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
        return ['sent', 'failed', 'bounced', 'delivered'].includes(email.status) &&
          email.recipients.every((r) => !['queued', 'deferred'].includes(r.status))
          ? email
          : undefined;
      },
      60_000,
      100,
    );
  }

  const received = () => mx.flatMap((server) => server.received);
  const statusOf = (email: EmailRecord, address: string) => email.recipients.find((r) => r.email === address);

  it('delivers each domain to its own MX, bounces only the recipients a server or DNS refuses', async () => {
    const id = await send(
      ['alice@one.test', 'nobody@one.test', 'bob@implicit.test', 'carol@nullmx.test', 'dave@nxdomain.test'],
      'Per domain',
    );
    const email = await settled(id);
    expect(statusOf(email, 'alice@one.test')?.status).toBe('delivered');
    expect(statusOf(email, 'bob@implicit.test')?.status).toBe('delivered');
    expect(statusOf(email, 'nobody@one.test')).toMatchObject({
      status: 'bounced',
      last_response: expect.stringMatching(/mx1\.one\.test: 550 5\.1\.1 no such user/),
    });
    expect(statusOf(email, 'carol@nullmx.test')).toMatchObject({ status: 'bounced', last_response: expect.stringMatching(/null MX/) });
    expect(statusOf(email, 'dave@nxdomain.test')).toMatchObject({
      status: 'bounced',
      last_response: expect.stringMatching(/no mail server/),
    });

    const got = received().filter((message) => message.subject === 'Per domain');
    // alice went to the preferred MX only; bob to implicit.test's own address.
    expect(got.map((m) => [m.server, m.to])).toEqual(
      expect.arrayContaining([
        ['127.0.0.2', ['alice@one.test']],
        ['127.0.0.3', ['bob@implicit.test']],
      ]),
    );
    expect(got).toHaveLength(2);
    for (const message of got) {
      expect(message.helo).toBe('mta.herald.test');
      // Opportunistic STARTTLS: the MX offered it, Herald used it.
      expect(message.secure).toBe(true);
      // The envelope sender is the email's own signed bounce address on the sending domain's bounce host.
      expect(message.from).toMatch(new RegExp(`^bounce\\+${id}-[0-9a-f]{20}@bounces\\.${sendingDomain.replaceAll('.', '\\.')}$`));
    }
    expect(new Set(got.map((m) => m.messageId)).size).toBe(1);
  }, 90_000);

  it('sends mail that passes SPF, DKIM and DMARC, aligned, against the records Herald tells the domain to publish', async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const expected = expectedRecords(domain, { spfInclude: h.stack.config.spfInclude, bounceDomain: h.stack.config.bounceDomain });
    // The domain's records exactly as shown, and the operator's SPF for Herald's sending IPs (loopback here).
    dns.set(expected.spf.name, { TXT: [expected.spf.value] });
    dns.set(expected.dkim.name, { TXT: [expected.dkim.value] });
    dns.set(expected.dmarc.name, { TXT: ['v=DMARC1; p=reject'] });
    dns.set(expected.return_path.name, { CNAME: expected.return_path.value });
    dns.set(h.stack.config.spfInclude, { TXT: ['v=spf1 ip4:127.0.0.0/8 -all'] });
    dns.set(h.stack.config.bounceDomain, { TXT: ['v=spf1 ip4:127.0.0.0/8 -all'] });

    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: {
        from: `Billing <billing@${domain.domain}>`,
        to: ['alice@one.test'],
        subject: 'Authenticated',
        html: '<p>Your <b>invoice</b></p>',
      },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    await settled((response.body.data as EmailRecord)._id);
    const message = received().find((m) => m.subject === 'Authenticated')!;
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    const result = await authenticate(message.raw, {
      ip: message.remoteAddress,
      helo: message.helo,
      sender: message.from,
      mta: 'mx1.one.test',
      resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
    });
    expect(result.spf && result.spf.status.result, JSON.stringify(result.spf)).toBe('pass');
    expect(result.spf && result.spf.domain).toBe(`bounces.${domain.domain}`);
    expect(result.dkim.results.map((r) => [r.signingDomain, r.status.result])).toEqual([[domain.domain, 'pass']]);
    expect(result.dmarc && result.dmarc.status.result, JSON.stringify(result.dmarc)).toBe('pass');
    expect(result.dmarc && result.dmarc.alignment).toMatchObject({
      spf: { result: `bounces.${domain.domain}` },
      dkim: { result: domain.domain },
    });
  }, 90_000);

  it('honours an enforced MTA-STS policy: only the MX hosts it names, over verified TLS; none named means deferred', async () => {
    const id = await send(['sam@sts.test', 'sue@sts-bad.test', 'sid@sts-self.test'], 'MTA-STS');
    const email = await settled(id);
    expect(statusOf(email, 'sam@sts.test')?.status).toBe('delivered');
    const got = received().filter((m) => m.subject === 'MTA-STS');
    // Not the preferred mx.sts.test (127.0.0.2): the policy names only mx-good.sts.test.
    expect(got.map((m) => [m.server, m.secure])).toEqual([['127.0.0.7', true]]);
    const refused = statusOf(email, 'sue@sts-bad.test')!;
    expect(refused.status).toBe('failed');
    expect(refused.last_response).toMatch(/MTA-STS: the enforced policy of sts-bad\.test names none of its MX hosts \(mx\.sts-bad\.test\)/);
    // Listed, but its certificate does not verify: never sent in clear or to an unverified host.
    const unverified = statusOf(email, 'sid@sts-self.test')!;
    expect(unverified.status).toBe('failed');
    expect(unverified.last_response).toMatch(/certificate/i);
  }, 90_000);

  it('falls over to the next MX when the preferred one does not answer', async () => {
    const id = await send(['erin@failover.test'], 'Failover');
    const email = await settled(id);
    expect(statusOf(email, 'erin@failover.test')?.status).toBe('delivered');
    expect(
      received()
        .filter((m) => m.subject === 'Failover')
        .map((m) => m.server),
    ).toEqual(['127.0.0.2']);
  }, 90_000);

  it('retries a greylisting MX (451, then 250) and delivers the message once', async () => {
    const id = await send(['gail@grey.test'], 'Greylisted');
    const email = await settled(id);
    expect(statusOf(email, 'gail@grey.test')).toMatchObject({ status: 'delivered' });
    expect(statusOf(email, 'gail@grey.test')!.attempts).toBeGreaterThanOrEqual(2);
    expect(received().filter((m) => m.subject === 'Greylisted')).toHaveLength(1);
  }, 90_000);

  it('holds mail for a destination that backs off without counting an attempt or emitting email.deferred', async () => {
    const busyMx = mx[4]!;
    const id = await send(['bea@busy.test'], 'Busy destination');
    const email = await settled(id);
    const busy = statusOf(email, 'bea@busy.test')!;
    expect(busy.status).toBe('delivered');
    // The 421 and the delivery are attempts; the retry 300 ms after the 421, while the destination
    // backed off for 3 s, was held by Herald without a connection and is not.
    expect(busy.attempts).toBe(2);
    expect(busyMx.connections).toHaveLength(2);
    const deferred = (await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).find(Event, { type: 'email.deferred' })).filter(
      (event) => event.data.email_id === id,
    );
    expect(deferred.map((event) => String(event.data.reason))).toEqual([expect.stringMatching(/421|too busy/)]);
    const held = await scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id).findOneOrFail(TransactionalEmail, { id });
    expect(held.handoffAttempts).toBe(2);
  }, 90_000);

  it('defers a domain whose MX cannot be reached, retries it, then fails it when the window closes', async () => {
    const id = await send(['dan@dead.test', 'alice@one.test'], 'Dead domain');
    const email = await settled(id);
    expect(statusOf(email, 'alice@one.test')?.status).toBe('delivered');
    const dead = statusOf(email, 'dan@dead.test')!;
    expect(dead.status).toBe('failed');
    expect(dead.attempts).toBeGreaterThanOrEqual(2);
    // Either the last attempt's own answer, or (once the destination backs off after the refused
    // connections) Herald's deferral quoting the refusal that started the back-off.
    expect(dead.last_response).toMatch(
      /retries_exhausted: .*(no mail host of dead\.test took the message|dead\.test is backing off .*ECONNREFUSED)/,
    );
  }, 90_000);

  it('handed every MX well-formed, DKIM-signed messages (checked on everything the MX hosts received)', async () => {
    expect(received().length).toBeGreaterThan(5);
    for (const message of received()) {
      expect(await messageProblems(message.raw, { orm: h.stack.orm }), message.subject).toEqual([]);
    }
  });
});

/**
 * Without SMTP_DIRECT_ALLOW_PRIVATE_TARGETS, direct delivery judges every MX address by the
 * address policy webhooks use: an MX on 127.0.0.1 is never connected to, and its recipient
 * fails with the reason once the retry window closes.
 */
describe('direct-to-MX delivery refuses MX hosts on forbidden addresses without the opt-in', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let dns: TestDnsServer;
  let mx: Awaited<ReturnType<typeof startMx>>;

  beforeAll(async () => {
    const port = await freePort();
    mx = await startMx('127.0.0.1', port);
    dns = await startDnsServer({
      'inside.test': { MX: [{ exchange: 'mx.inside.test', priority: 10 }] },
      'mx.inside.test': { A: ['127.0.0.1'] },
    });
    h = await startApiHarness(
      {
        SMTP_DELIVERY: 'direct',
        SMTP_DIRECT_PORT: String(port),
        SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: 'false',
        SMTP_MTA_STS: 'off',
        DNS_SERVERS: dns.address,
        EMAIL_RETRY_SCHEDULE: '0s,200ms',
        EMAIL_RETRY_WINDOW: '1s',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    await setCredits(h.stack.orm, h.workspace.org.id, 10);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await mx?.close();
    await dns?.close();
  });

  it('fails the recipient of a domain whose MX resolves to 127.0.0.1, saying why, and never connects to it', async () => {
    const { domain } = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${domain}`, to: ['ida@inside.test'], subject: 'Inside', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const id = (response.body.data as EmailRecord)._id;
    const email = await waitFor(
      `email ${id} to fail`,
      async () => {
        const found = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
        return found.recipients.every((r) => !['queued', 'deferred'].includes(r.status)) ? found : undefined;
      },
      60_000,
      100,
    );
    expect(email.recipients[0]).toMatchObject({
      email: 'ida@inside.test',
      status: 'failed',
      last_response: expect.stringMatching(
        /the mail hosts of inside\.test have only addresses Herald does not deliver to: mx\.inside\.test \[127\.0\.0\.1\] \(loopback\)/,
      ),
    });
    expect(mx.connections).toEqual([]);
    expect(mx.received).toEqual([]);
  }, 90_000);
});
