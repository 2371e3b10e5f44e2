import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A PEM key and certificate, plus where they were written. */
export interface TestCertificate {
  key: string;
  cert: string;
  certFile: string;
}

/**
 * Throwaway certificates made with openssl in a temporary folder, for TLS tests over loopback:
 * a self-signed one (what a stock Postfix shows) and a test CA that signs server certificates.
 * Nothing is checked in; `remove()` deletes the folder.
 */
export function createTestCertificates() {
  const dir = mkdtempSync(join(tmpdir(), 'herald-test-certs-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  const newKey = (name: string) => openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  let serial = 0;

  return {
    dir,
    /** A self-signed certificate for `commonName` (like Debian's ssl-cert-snakeoil). */
    selfSigned(commonName: string): TestCertificate {
      const name = `self-${++serial}`;
      newKey(name);
      openssl(
        'req',
        '-new',
        '-x509',
        '-key',
        `${name}.key`,
        '-out',
        `${name}.crt`,
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        `subjectAltName=DNS:${commonName}`,
      );
      return { key: read(`${name}.key`), cert: read(`${name}.crt`), certFile: join(dir, `${name}.crt`) };
    },
    /** A certificate authority that signs server certificates with `issue`. */
    authority(commonName: string) {
      const ca = `ca-${++serial}`;
      newKey(ca);
      openssl(
        'req',
        '-new',
        '-x509',
        '-key',
        `${ca}.key`,
        '-out',
        `${ca}.crt`,
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      );
      return {
        certFile: join(dir, `${ca}.crt`),
        /**
         * A server certificate for the given subject alternative names (`DNS:localhost`,
         * `IP:127.0.0.1`), or with `usage` clientAuth a client certificate for mutual TLS.
         */
        issue(altNames: string[], usage: 'serverAuth' | 'clientAuth' = 'serverAuth'): TestCertificate {
          const name = `server-${++serial}`;
          newKey(name);
          openssl(
            'req',
            '-new',
            '-key',
            `${name}.key`,
            '-out',
            `${name}.csr`,
            '-subj',
            `/CN=${altNames[0]?.replace(/^\w+:/, '') ?? 'server'}`,
          );
          writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${altNames.join(',')}\nextendedKeyUsage=${usage}\n`);
          openssl(
            'x509',
            '-req',
            '-in',
            `${name}.csr`,
            '-CA',
            `${ca}.crt`,
            '-CAkey',
            `${ca}.key`,
            '-CAcreateserial',
            '-out',
            `${name}.crt`,
            '-days',
            '2',
            '-extfile',
            `${name}.ext`,
          );
          return { key: read(`${name}.key`), cert: read(`${name}.crt`), certFile: join(dir, `${name}.crt`) };
        },
      };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
