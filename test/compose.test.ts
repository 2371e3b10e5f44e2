import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, loadDevEnv } from '../src/config.ts';
import { DEV_SETTINGS } from '../src/settings/dev-settings.ts';
import { SERVER_SETTINGS } from '../src/settings/server-settings.ts';
import { cacheDir, REPO_ROOT } from '../src/dev/paths.ts';
import { searchAttributeCliSpecs } from '../src/temporal/search-attributes.ts';

/**
 * docker-compose.yml is checked the way `docker compose config` checks it: interpolation
 * (with `${VAR:?message}` errors), the compose-spec JSON schema, normalisation, path
 * resolution and consistency. With a compose plugin on the machine that is used; otherwise a
 * small Go program around compose-go (the loader inside docker compose) is built once and
 * cached under the Herald cache directory. Without either the suite fails, it never skips.
 */

const COMPOSE_FILE = join(REPO_ROOT, 'docker-compose.yml');
const ENV_EXAMPLE = join(REPO_ROOT, 'deploy/herald.env.example');
const VALIDATOR_DIR = join(REPO_ROOT, 'test/compose/validator');
const BUILD_TIMEOUT_MS = 9 * 60_000;

const HERALD_PROCESSES = ['api', 'worker', 'smtp'] as const;
const LONG_RUNNING = ['postgres', 'redis', 'temporal', 'temporal-ui', ...HERALD_PROCESSES];
const ONE_SHOT = ['temporal-schema', 'temporal-setup', 'migrate'];

const log = (line: string) => process.stdout.write(`[compose test] ${line}\n`);

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const code = typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr: code === -1 ? `${stderr}${error.message}` : stderr });
      },
    );
  });
}

function onPath(command: string, path: string): string | undefined {
  return path
    .split(':')
    .filter(Boolean)
    .map((dir) => join(dir, command))
    .find((candidate) => existsSync(candidate));
}

/** `config --format json` of one compose file, in a given environment. */
interface ComposeConfig {
  engine: string;
  config(file: string, env: Record<string, string>): Promise<RunResult>;
}

interface ComposeService {
  image?: string;
  command?: string[] | null;
  restart?: string;
  environment?: Record<string, string | null>;
  healthcheck?: { test?: string[]; disable?: boolean };
  depends_on?: Record<string, { condition: string }>;
  ports?: { target: number; published?: string; host_ip?: string }[];
  container_name?: string;
  volumes?: { type: string; source?: string; target: string; read_only?: boolean }[];
}

interface ComposeModel {
  name: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/**
 * Only what interpolation should see: no stray HERALD_* or COMPOSE_* from the developer's
 * shell, and no .env file (COMPOSE_DISABLE_ENV_FILE), so every run is reproducible.
 */
function composeEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const dev = loadDevEnv();
  return { PATH: dev.PATH, HOME: dev.HOME, COMPOSE_DISABLE_ENV_FILE: 'true', ...extra };
}

async function dockerCompose(): Promise<ComposeConfig | undefined> {
  const probe = await run('docker', ['compose', 'version'], { env: composeEnv({}), timeoutMs: 20_000 });
  if (probe.code !== 0) return undefined;
  return {
    engine: `docker compose (${probe.stdout.trim()})`,
    config: (file, env) =>
      run('docker', ['compose', '--file', file, 'config', '--format', 'json'], {
        env: composeEnv(env),
        timeoutMs: 60_000,
      }),
  };
}

function findGo(path: string): string | undefined {
  return onPath('go', path) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

/** Builds test/compose/validator once per source version into the Herald cache directory. */
async function composeValidator(): Promise<ComposeConfig> {
  const dev = loadDevEnv();
  const hash = createHash('sha256');
  for (const name of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(VALIDATOR_DIR, name)));
  const binary = join(cacheDir(dev), `compose-validate-${hash.digest('hex').slice(0, 16)}`);

  if (!existsSync(binary)) {
    const go = findGo(dev.PATH);
    if (!go) {
      throw new Error(
        'cannot validate docker-compose.yml: neither `docker compose` nor Go is installed.\n' +
          '  Install Go 1.24+ (the test builds test/compose/validator with it, once per machine)\n' +
          '  or Docker with the compose plugin.',
      );
    }
    const staging = `${binary}.building-${process.pid}`;
    mkdirSync(cacheDir(dev), { recursive: true });
    log(`building the compose validator with ${go} (first run on this machine)...`);
    const started = Date.now();
    const build = await run(go, ['build', '-buildvcs=false', '-trimpath', '-o', staging, '.'], {
      cwd: VALIDATOR_DIR,
      // go.sum is committed: readonly makes a stale one an error instead of a silent update.
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' },
      timeoutMs: BUILD_TIMEOUT_MS,
    });
    if (build.code !== 0) {
      rmSync(staging, { force: true });
      throw new Error(`go build of test/compose/validator failed (exit ${build.code}):\n${build.stdout}${build.stderr}`);
    }
    renameSync(staging, binary);
    log(`built ${binary} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  return {
    engine: `compose-go validator (${binary})`,
    config: (file, env) => run(binary, ['-format', 'json', file], { env: composeEnv(env), timeoutMs: 60_000 }),
  };
}

function parseModel(result: RunResult): ComposeModel {
  expect(result.code, `compose config failed:\n${result.stderr}`).toBe(0);
  return JSON.parse(result.stdout) as ComposeModel;
}

function service(model: ComposeModel, name: string): ComposeService {
  const found = model.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
}

describe('docker-compose.yml', () => {
  const encryptionKey = randomBytes(32).toString('base64');
  let engine: ComposeConfig | undefined;
  let unavailable: Error | undefined;
  let scratch: string;
  /** deploy/herald.env as the README's steps make it: the example with a key generated once. */
  let envFile: string;

  // Without a way to validate, every test fails with the reason (vitest would only mark the
  // tests skipped if the hook itself threw).
  const compose = (): ComposeConfig => {
    if (engine) return engine;
    throw unavailable ?? new Error('no compose validator');
  };

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'herald-compose-'));
    envFile = join(scratch, 'herald.env');
    writeFileSync(
      envFile,
      readFileSync(ENV_EXAMPLE, 'utf8').replace(/^HERALD_ENCRYPTION_KEY=.*$/m, `HERALD_ENCRYPTION_KEY=${encryptionKey}`),
    );
    try {
      engine = (await dockerCompose()) ?? (await composeValidator());
      log(`validating with ${engine.engine}`);
    } catch (error) {
      unavailable = error instanceof Error ? error : new Error(String(error));
    }
  }, 10 * 60_000);

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('validates with docker compose config semantics', async () => {
    const model = parseModel(await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: envFile }));

    expect(model.name).toBe('herald');
    expect(Object.keys(model.services).sort()).toEqual([...LONG_RUNNING, ...ONE_SHOT].sort());

    for (const name of LONG_RUNNING) {
      const healthcheck = service(model, name).healthcheck;
      expect(healthcheck?.test?.length ?? 0, `${name} has a healthcheck`).toBeGreaterThan(0);
      expect(healthcheck?.disable ?? false, `${name} healthcheck enabled`).toBe(false);
      expect(service(model, name).restart, `${name} restarts`).toBe('unless-stopped');
    }
    for (const name of ONE_SHOT) {
      expect(service(model, name).restart, `${name} runs once`).toBe('no');
    }

    for (const name of HERALD_PROCESSES) {
      const herald = service(model, name);
      expect(herald.command).toEqual([name]);
      const env = herald.environment ?? {};
      for (const key of ['DATABASE_URL', 'REDIS_URL', 'TEMPORAL_ADDRESS', 'HERALD_ENCRYPTION_KEY']) {
        expect(env[key], `${name} ${key}`).toBeTruthy();
      }
      expect(env.HERALD_ENCRYPTION_KEY).toBe(encryptionKey);
      expect(env.WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe('false');

      // The environment is a valid production configuration as it stands.
      const config = loadConfig(Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value ?? ''])));
      expect(config.env).toBe('production');
      expect(config.temporal.address).toBe('temporal:7233');
      expect(config.webhooks.allowPrivateTargets).toBe(false);

      // Every setting of the env file reaches every process as it is (compose's own wiring wins).
      expect(env.PUBLIC_URL).toBe('https://mail.example.com');
      expect(env.BOUNCE_DOMAIN).toBe('bounces.mail.example.com');
      expect(config.http.publicUrl).toBe('https://mail.example.com');
      expect(config.spfInclude).toBe('spf.mail.example.com');
      expect(JSON.stringify({ ...config, metrics: null })).not.toMatch(/localhost|127\.0\.0\.1/);
      // Scalable: no fixed container name.
      expect(herald.container_name, `${name} container_name`).toBeUndefined();

      // Every process shares the blob volume at BLOB_DIR.
      expect(herald.volumes).toContainEqual(expect.objectContaining({ type: 'volume', source: 'blobs', target: env.BLOB_DIR }));

      expect(herald.depends_on).toMatchObject({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        temporal: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
        'temporal-setup': { condition: 'service_completed_successfully' },
      });
    }
    expect(service(model, 'migrate').command).toEqual(['migrate']);
    expect(model.volumes).toHaveProperty('postgres-data');
    expect(model.volumes).toHaveProperty('blobs');

    // The search attributes the code uses are the ones the stack registers.
    const registered = (service(model, 'temporal-setup').environment?.HERALD_SEARCH_ATTRIBUTES ?? '').split(/\s+/);
    expect(registered.filter(Boolean).sort()).toEqual(
      searchAttributeCliSpecs()
        .map((spec) => `${spec.name}=${spec.type}`)
        .sort(),
    );

    const published = (name: string) => (service(model, name).ports ?? []).map((port) => `${port.published ?? ''}->${port.target}`);
    // A range: `--scale api=N` gives each replica its own host port.
    expect(published('api')).toEqual(['3000-3009->3000']);
    expect(published('smtp')).toEqual(['25->2525', '587->2587', '465->2465']);
    expect(service(model, 'smtp').environment?.SMTP_SUBMISSION_PORT).toBe('2587');
    expect(service(model, 'smtp').volumes).toContainEqual(
      expect.objectContaining({ type: 'bind', target: '/etc/herald/tls', read_only: true }),
    );

    expect(published('temporal-ui')).toEqual(['8080->8080']);
  });

  it("keeps blobs on the shared volume by default, and in the s3 profile's SeaweedFS bucket with BLOB_STORE=s3 in the env file", async () => {
    const envOf = (model: ComposeModel, name: string) =>
      Object.fromEntries(Object.entries(service(model, name).environment ?? {}).map(([key, value]) => [key, value ?? '']));
    const filesystem = parseModel(await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: envFile }));
    expect(loadConfig(envOf(filesystem, 'api')).blobStore).toEqual({ kind: 'filesystem', dir: '/var/lib/herald/blobs' });
    expect(Object.keys(filesystem.services)).not.toContain('seaweedfs');

    const s3File = join(scratch, 's3.env');
    writeFileSync(
      s3File,
      `${readFileSync(envFile, 'utf8')}\nBLOB_STORE=s3\nS3_ENDPOINT=http://seaweedfs:8333\nS3_FORCE_PATH_STYLE=true\nS3_BUCKET=herald\nS3_ACCESS_KEY_ID=herald\nS3_SECRET_ACCESS_KEY=a-real-secret\n`,
    );
    const s3 = parseModel(await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: s3File, COMPOSE_PROFILES: 's3' }));
    expect(Object.keys(s3.services).sort()).toEqual([...LONG_RUNNING, ...ONE_SHOT, 'seaweedfs', 'seaweedfs-bucket'].sort());
    const seaweedfs = service(s3, 'seaweedfs');
    expect(seaweedfs.image).toMatch(/^chrislusf\/seaweedfs:/);
    // Its one identity is the env file's key, the key the Herald processes sign with.
    expect(seaweedfs.environment).toMatchObject({ S3_ACCESS_KEY_ID: 'herald', S3_SECRET_ACCESS_KEY: 'a-real-secret' });
    expect(seaweedfs.healthcheck?.test?.length ?? 0).toBeGreaterThan(0);
    expect(seaweedfs.volumes).toContainEqual(expect.objectContaining({ type: 'volume', source: 'seaweedfs-data', target: '/data' }));
    // Published for an operator on this host only.
    expect(seaweedfs.ports).toEqual([expect.objectContaining({ target: 8333, host_ip: '127.0.0.1' })]);
    expect(service(s3, 'seaweedfs-bucket').restart).toBe('no');
    expect(service(s3, 'seaweedfs-bucket').depends_on).toMatchObject({ seaweedfs: { condition: 'service_healthy' } });
    expect(s3.volumes).toHaveProperty('seaweedfs-data');
    for (const name of HERALD_PROCESSES) {
      expect(loadConfig(envOf(s3, name)).blobStore, name).toEqual({
        kind: 's3',
        s3: {
          bucket: 'herald',
          region: 'us-east-1',
          endpoint: 'http://seaweedfs:8333',
          forcePathStyle: true,
          keyPrefix: '',
          credentials: { accessKeyId: 'herald', secretAccessKey: 'a-real-secret' },
        },
      });
      expect(service(s3, name).depends_on).toMatchObject({ 'seaweedfs-bucket': { condition: 'service_completed_successfully' } });
    }
  });

  it('scales every service the docs scale: no container name, no single fixed host port, blobs shared', async () => {
    const model = parseModel(await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: envFile }));
    // Every `--scale <service>=<n>` the README, docs/production.md and the compose file's own header show.
    const documents = ['README.md', 'docs/production.md', 'docker-compose.yml'].map((file) => readFileSync(join(REPO_ROOT, file), 'utf8'));
    const scaled = documents.flatMap((text) =>
      [...text.matchAll(/--scale ([a-z-]+)=(\d+)/g)].map((match) => ({ name: match[1]!, count: Number(match[2]) })),
    );
    expect(scaled.map((entry) => entry.name).sort()).toEqual(expect.arrayContaining(['api', 'worker']));
    for (const { name, count } of scaled) {
      const scaledService = service(model, name);
      expect(scaledService.container_name, `${name} has no container name`).toBeUndefined();
      for (const port of scaledService.ports ?? []) {
        // A published port is a range with a port for each replica (compose gives each its own).
        const [first, last = first] = (port.published ?? '').split('-').map(Number);
        expect(last! - first! + 1, `${name} publishes ${port.published ?? '(any)'} for ${count} replicas`).toBeGreaterThanOrEqual(count);
      }
      // Replicas read the same env file (its settings are in every process's environment, checked
      // above) and share no disk of their own: the blob volume, or the bucket with BLOB_STORE=s3.
      expect(scaledService.environment?.PUBLIC_URL, name).toBe('https://mail.example.com');
      expect(scaledService.volumes ?? [], name).toContainEqual(expect.objectContaining({ type: 'volume', source: 'blobs' }));
    }
  });

  it('refuses to start without the env file, naming it', async () => {
    const missing = join(scratch, 'absent.env');
    const result = await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: missing });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(missing);
  });

  it('passes any setting through the env file, and names only declared settings in its example', async () => {
    const file = join(scratch, 'tls.env');
    writeFileSync(
      file,
      `${readFileSync(envFile, 'utf8')}\nSMTP_TLS_KEY_FILE=/etc/herald/tls/key.pem\nSMTP_TLS_CERT_FILE=/etc/herald/tls/cert.pem\nSMTP_SUBMISSIONS_PORT=2465\nHERALD_WORKER_HEAP_MB=768\n`,
    );
    const model = parseModel(await compose().config(COMPOSE_FILE, { HERALD_ENV_FILE: file }));
    const env = service(model, 'smtp').environment ?? {};
    const config = loadConfig(Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value ?? ''])));
    expect(config.smtp).toMatchObject({ tlsKeyFile: '/etc/herald/tls/key.pem', tlsCertFile: '/etc/herald/tls/cert.pem' });
    expect(config.submission).toEqual({ port: 2587, host: '0.0.0.0', implicitTlsPort: 2465 });
    expect(service(model, 'worker').environment?.HERALD_WORKER_HEAP_MB).toBe('768');

    const named = [...readFileSync(ENV_EXAMPLE, 'utf8').matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]!);
    expect(named.length).toBeGreaterThan(5);
    // The README's settings: the services' and the launcher's (HERALD_WORKER_HEAP_MB).
    expect(named.filter((name) => !(name in SERVER_SETTINGS) && !(name in DEV_SETTINGS))).toEqual([]);
  });

  it("gives each of the image's processes its Node flags, through the launcher as the image runs it", async () => {
    // The entrypoint with the image's environment, on a `node` that is this Node: the process the
    // launcher becomes prints the flags it runs with (NODE_OPTIONS reaches it through execve) and
    // exits before Herald starts.
    const bin = join(scratch, 'bin');
    mkdirSync(bin, { recursive: true });
    if (!existsSync(join(bin, 'node'))) symlinkSync(process.execPath, join(bin, 'node'));
    const probe = `if (process.env.HERALD_RUNTIME === '1') { console.log(JSON.stringify(process.execArgv)); process.exit(0); }`;
    const flagsOf = async (args: string[], env: Record<string, string> = {}) => {
      const result = await run('sh', [join(REPO_ROOT, 'deploy/herald-entrypoint.sh'), ...args], {
        cwd: REPO_ROOT,
        env: {
          PATH: `${bin}:/usr/bin:/bin`,
          NODE_ENV: 'production',
          NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(probe)}`,
          ...env,
        },
        timeoutMs: 20_000,
      });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout.trim()) as string[];
    };
    expect(await flagsOf(['worker'])).toEqual(['--max-old-space-size=512', '--max-semi-space-size=8']);
    expect(await flagsOf(['all'], { HERALD_WORKER_HEAP_MB: '768' })).toEqual([
      '--max-old-space-size=768',
      '--max-semi-space-size=32',
      '--expose-gc',
    ]);
    expect(await flagsOf(['api'])).toEqual(['--max-semi-space-size=32']);
    expect(await flagsOf(['smtp'])).toEqual(['--max-semi-space-size=8']);
    expect(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).toMatch(/^ENTRYPOINT \["\/app\/deploy\/herald-entrypoint\.sh"\]$/m);
    // In the build context (.dockerignore lets in only what the image copies).
    expect(readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n')).toContain('!deploy/herald-entrypoint.sh');
  });

  it('rejects a file that breaks the compose schema', async () => {
    const original = readFileSync(COMPOSE_FILE, 'utf8');
    const broken = original.replace(/^(\s+)healthcheck:/m, '$1healthcheckk:');
    expect(broken).not.toBe(original);
    const file = join(scratch, 'docker-compose.yml');
    writeFileSync(file, broken);

    const result = await compose().config(file, { HERALD_ENV_FILE: envFile });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('healthcheckk');
  });
});
