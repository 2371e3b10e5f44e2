import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { createRelay, type Relay, type RelayResult } from '../../src/modules/outbound/relay.ts';
import type { RelayTlsSettings } from '../../src/smtp/tls-policy.ts';
import { createTestCertificates } from '../support/test-certificates.ts';
import { startTlsRelay } from '../support/tls-relay.ts';

type TlsRelay = Awaited<ReturnType<typeof startTlsRelay>>;

const MESSAGE = { from: 'app@example.com', to: 'reader@example.com', subject: 'TLS policy', text: 'Hello over loopback' };
const ENVELOPE = { from: 'bounce@example.com', to: ['reader@example.com'] };

/** Real nodemailer client against real smtp-server listeners on 127.0.0.1, one policy at a time. */
describe('the outbound relay under each TLS policy', () => {
  const certs = createTestCertificates();
  const relays: Relay[] = [];
  const servers: TlsRelay[] = [];
  let logLines: string[] = [];
  let snakeoil: TlsRelay;
  let plain: TlsRelay;
  let privateCa: ReturnType<typeof certs.authority>;
  let signed: TlsRelay;

  const openRelay = (url: string, tls: RelayTlsSettings) => {
    const relay = createRelay({ url, poolSize: 1, tls, logger: createLogger('info', {}, (line) => logLines.push(line)) });
    relays.push(relay);
    return relay;
  };
  const sendOnce = (relay: Relay): Promise<RelayResult> => relay.send(MESSAGE, ENVELOPE);
  const warnings = () =>
    logLines.map((line) => JSON.parse(line) as { level: string; msg: string; reason?: string }).filter((entry) => entry.level === 'warn');

  beforeAll(async () => {
    privateCa = certs.authority('Herald Test CA');
    snakeoil = await startTlsRelay({ certificate: certs.selfSigned('mail.localdomain') });
    plain = await startTlsRelay({ certificate: null });
    signed = await startTlsRelay({ certificate: privateCa.issue(['IP:127.0.0.1']) });
    servers.push(snakeoil, plain, signed);
  });

  afterAll(async () => {
    for (const relay of relays) relay.close();
    await Promise.all(servers.map((server) => server.close()));
    certs.remove();
  });

  it('opportunistic: upgrades with STARTTLS and delivers past a self-signed certificate', async () => {
    const before = snakeoil.received.length;
    const result = await sendOnce(openRelay(`smtp://127.0.0.1:${snakeoil.port}`, { policy: 'opportunistic', source: 'loopback' }));
    expect(result.kind, JSON.stringify(result)).toBe('recipients');
    expect(result.kind === 'recipients' && result.recipients.map((r) => r.accepted)).toEqual([true]);
    expect(snakeoil.received.slice(before).map((m) => m.secure)).toEqual([true]);
  });

  it('none: sends in plaintext although the relay offers STARTTLS', async () => {
    const before = snakeoil.received.length;
    const result = await sendOnce(openRelay(`smtp://127.0.0.1:${snakeoil.port}`, { policy: 'none', source: 'SMTP_RELAY_TLS' }));
    expect(result.kind, JSON.stringify(result)).toBe('recipients');
    expect(snakeoil.received.slice(before).map((m) => m.secure)).toEqual([false]);
  });

  it('verify: a self-signed certificate leaves the message unsent with a plain reason, and one warning for two messages', async () => {
    logLines = [];
    const before = snakeoil.received.length;
    const relay = openRelay(`smtp://127.0.0.1:${snakeoil.port}`, { policy: 'verify', source: 'SMTP_RELAY_TLS' });
    const results = [await sendOnce(relay), await sendOnce(relay)];
    for (const result of results) {
      expect(result, JSON.stringify(result)).toEqual({
        kind: 'unreachable',
        response:
          'TLS with the relay failed (policy verify): its certificate was refused: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
      });
    }
    expect(snakeoil.received.length).toBe(before);
    expect(warnings(), logLines.join('\n')).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ msg: 'relay TLS failed: messages stay deferred until it works', reason: results[0]?.response });
  });

  it('verify: a relay that does not offer STARTTLS is unreachable (temporary), not a refusal of the message', async () => {
    const result = await sendOnce(openRelay(`smtp://127.0.0.1:${plain.port}`, { policy: 'verify', source: 'SMTP_RELAY_TLS' }));
    expect(result.kind, JSON.stringify(result)).toBe('unreachable');
    expect(result.kind === 'unreachable' && result.response).toMatch(
      /^TLS with the relay failed \(policy verify\): the relay refused STARTTLS: 5\d\d /,
    );
    expect(plain.received).toHaveLength(0);
  });

  it('verify: a certificate from a private CA passes once SMTP_RELAY_CA_FILE names that CA', async () => {
    const before = signed.received.length;
    const result = await sendOnce(
      openRelay(`smtp://127.0.0.1:${signed.port}`, { policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: privateCa.certFile }),
    );
    expect(result.kind, JSON.stringify(result)).toBe('recipients');
    expect(signed.received.slice(before).map((m) => m.secure)).toEqual([true]);
  });

  it('verify: the same certificate is refused without the CA file', async () => {
    const result = await sendOnce(openRelay(`smtp://127.0.0.1:${signed.port}`, { policy: 'verify', source: 'SMTP_RELAY_TLS' }));
    expect(result.kind === 'unreachable' && result.response, JSON.stringify(result)).toMatch(
      /^TLS with the relay failed \(policy verify\): its certificate was refused: .+ \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)$/,
    );
  });

  it('verify: a trusted certificate for another host name is refused', async () => {
    const elsewhere = await startTlsRelay({ certificate: privateCa.issue(['DNS:relay.example.test']) });
    servers.push(elsewhere);
    const result = await sendOnce(
      openRelay(`smtp://127.0.0.1:${elsewhere.port}`, { policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: privateCa.certFile }),
    );
    expect(result.kind === 'unreachable' && result.response, JSON.stringify(result)).toMatch(
      /certificate was refused: .*127\.0\.0\.1.* \(ERR_TLS_CERT_ALTNAME_INVALID\)$/,
    );
    expect(elsewhere.received).toHaveLength(0);
  });

  it('smtps://: implicit TLS verifies with the CA file, and refuses a self-signed certificate', async () => {
    const implicitSigned = await startTlsRelay({ certificate: privateCa.issue(['IP:127.0.0.1']), implicit: true });
    const implicitSnakeoil = await startTlsRelay({ certificate: certs.selfSigned('mail.localdomain'), implicit: true });
    servers.push(implicitSigned, implicitSnakeoil);
    const passed = await sendOnce(
      openRelay(`smtps://127.0.0.1:${implicitSigned.port}`, { policy: 'verify', source: 'SMTP_RELAY_CA_FILE', caFile: privateCa.certFile }),
    );
    expect(passed.kind, JSON.stringify(passed)).toBe('recipients');
    expect(implicitSigned.received.map((m) => m.secure)).toEqual([true]);
    const refused = await sendOnce(openRelay(`smtps://127.0.0.1:${implicitSnakeoil.port}`, { policy: 'verify', source: 'smtps' }));
    expect(refused.kind === 'unreachable' && refused.response, JSON.stringify(refused)).toMatch(
      /certificate was refused: self-signed certificate/,
    );
  });
});
