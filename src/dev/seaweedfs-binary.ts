import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { answers, explicitBinary, findGo, waitForOtherBuild, type BinaryRequest } from './go-tools.ts';

/** The SeaweedFS source the tests' S3 server is built from (Apache-2.0; the Go module proxy serves it). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';
const MODULE = `github.com/seaweedfs/seaweedfs@${SEAWEEDFS_VERSION}`;

const works = (binary: string): boolean => answers(binary, ['version'], /version/i);

export function cachedSeaweedfsPath(cacheDir: string): string {
  return join(cacheDir, `seaweedfs-${SEAWEEDFS_VERSION}`, 'weed');
}

/** Makes every directory of a copied module cache folder (read-only there) writable, so it can be removed. */
function makeWritable(dir: string): void {
  chmodSync(dir, statSync(dir).mode | 0o200);
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) makeWritable(join(dir, entry.name));
}

function run(go: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): string {
  const result = spawnSync(go, args, { ...options, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${result.status}); see the output above`);
  return result.stdout;
}

/**
 * Finds the SeaweedFS server (`weed`) the tests use as their S3-compatible store: SEAWEEDFS_BIN,
 * then the cached build; else builds it into the cache once per machine (about 5 minutes on
 * two idle cores). Its go.mod has a `replace` line, so `go install` refuses it: the module is
 * downloaded through the Go module proxy, copied to a staging folder and built there with its
 * own go.sum, then renamed into place (a build that dies leaves only the staging folder).
 */
export function resolveSeaweedfsBinary(options: BinaryRequest): string {
  const explicit = explicitBinary(options, 'SEAWEEDFS_BIN', works);
  if (explicit) return explicit;
  const cached = cachedSeaweedfsPath(options.cacheDir);
  if (existsSync(cached) && works(cached)) return cached;
  waitForOtherBuild(options.cacheDir, `seaweedfs-${SEAWEEDFS_VERSION}`, options.log);
  if (existsSync(cached) && works(cached)) return cached;
  const go = findGo(options.path);
  if (!go) {
    throw new Error(
      `SeaweedFS (the tests' S3 server) was not found and Go is not installed to build it.\n` +
        `  Install Go 1.26+ and run again (Herald builds ${MODULE} into ${cached}), or set SEAWEEDFS_BIN.`,
    );
  }
  const staging = join(options.cacheDir, `seaweedfs-${SEAWEEDFS_VERSION}.building-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  options.log(`building SeaweedFS ${SEAWEEDFS_VERSION} with Go (first run on this machine: about 5 minutes on two idle cores)...`);
  const started = Date.now();
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' };
  try {
    const { Dir } = JSON.parse(run(go, ['mod', 'download', '-json', MODULE], { env })) as { Dir: string };
    options.log(`  source downloaded to ${Dir}; compiling in ${staging}`);
    const source = join(staging, 'src');
    cpSync(Dir, source, { recursive: true });
    makeWritable(source);
    run(go, ['build', '-o', join(staging, 'weed'), './weed'], { cwd: source, env });
    mkdirSync(join(options.cacheDir, `seaweedfs-${SEAWEEDFS_VERSION}`), { recursive: true });
    renameSync(join(staging, 'weed'), cached);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  options.log(`built SeaweedFS in ${Math.round((Date.now() - started) / 1000)} s: ${cached}`);
  return cached;
}
