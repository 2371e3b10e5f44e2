import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, isListening } from './ports.ts';
import { spawnService, waitFor, type Service } from './processes.ts';

export interface SeaweedfsServer {
  /** The S3 API, e.g. `http://127.0.0.1:41233`. */
  endpoint: string;
  /** The one identity the server accepts (requests are signed: auth is real). */
  accessKeyId: string;
  secretAccessKey: string;
  service: Service;
  stop(): Promise<void>;
}

/** Eight distinct free ports: four services, each with its gRPC port. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/**
 * Starts `weed server` (master, volume, filer and S3 gateway in one process) on 127.0.0.1 with
 * its data in `dataDir`, every port free and chosen here, no telemetry, and one S3 identity
 * with random keys written to an s3 config file, so every request is signature-checked. Waits
 * until the S3 port answers a signed request (the caller's `ready` probe).
 */
export async function startSeaweedfs(options: {
  binary: string;
  dataDir: string;
  logFile: string;
  /** Resolves once the server serves S3 with these credentials (e.g. a ListBuckets). */
  ready: (server: { endpoint: string; accessKeyId: string; secretAccessKey: string }) => Promise<boolean>;
  readyTimeoutMs?: number;
}): Promise<SeaweedfsServer> {
  mkdirSync(options.dataDir, { recursive: true });
  const accessKeyId = `herald${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const s3Config = join(options.dataDir, 's3.json');
  const identity = {
    name: 'herald',
    credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }],
    actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
  };
  writeFileSync(s3Config, JSON.stringify({ identities: [identity] }), { mode: 0o600 });
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = (await freePorts(8)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const args = [
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${options.dataDir}`,
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    '-master.volumeSizeLimitMB=64',
    '-master.telemetry=false',
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    '-filer',
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-filer.localSocket=${join(options.dataDir, 'filer.sock')}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.config=${s3Config}`,
  ];
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const service = spawnService({ name: 'seaweedfs', command: options.binary, args, onLine: (line) => log.write(line + '\n') });
  void service.exited.then(() => log.end());
  const server = { endpoint: `http://127.0.0.1:${s3}`, accessKeyId, secretAccessKey };
  const exitedEarly = service.exited.then((code) => {
    throw new Error(`SeaweedFS exited with code ${code} while starting; its log: ${options.logFile}`);
  });
  try {
    await Promise.race([
      exitedEarly,
      waitFor(
        `SeaweedFS's S3 API on ${server.endpoint}`,
        async () => ((await isListening('127.0.0.1', s3)) && (await options.ready(server)) ? true : undefined),
        options.readyTimeoutMs ?? 120_000,
        500,
      ),
    ]);
  } catch (error) {
    await service.stop();
    throw error;
  }
  exitedEarly.catch(() => {});
  return { ...server, service, stop: () => service.stop(15_000) };
}
