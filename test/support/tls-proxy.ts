import { connect as connectTcp, type AddressInfo, type Socket } from 'node:net';
import { createServer, type TLSSocket } from 'node:tls';

/**
 * A TLS-terminating proxy in front of a plaintext TCP service (the Temporal dev server's gRPC
 * port), standing in for a secured Temporal frontend: it shows `cert` and, with `clientCa`,
 * demands a client certificate signed by that authority (mutual TLS). Each accepted connection
 * is piped to `target` as it is; handshakes it refused are kept with their reason.
 */
export async function startTlsProxy(options: { target: { host: string; port: number }; key: string; cert: string; clientCa?: string }) {
  const refused: string[] = [];
  const accepted: { subject: string | undefined }[] = [];
  const sockets = new Set<Socket>();
  const server = createServer(
    {
      key: options.key,
      cert: options.cert,
      // gRPC speaks HTTP/2 only: both SDK transports insist on ALPN h2.
      ALPNProtocols: ['h2'],
      ...(options.clientCa ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (client: TLSSocket) => {
      const commonName = client.getPeerCertificate()?.subject?.CN;
      accepted.push({ subject: Array.isArray(commonName) ? commonName.join(',') : commonName });
      const upstream = connectTcp(options.target.port, options.target.host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    },
  );
  server.on('tlsClientError', (error) => refused.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    port,
    /** Connections whose handshake passed, with the client certificate's common name. */
    accepted,
    /** Why handshakes were refused (`peer did not return a certificate`, an unknown CA…). */
    refused,
    async close(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type TlsProxy = Awaited<ReturnType<typeof startTlsProxy>>;
