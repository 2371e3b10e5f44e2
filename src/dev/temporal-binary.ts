import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { answers, explicitBinary, findGo, onPath, waitForOtherBuild, type BinaryRequest } from './go-tools.ts';

export const TEMPORAL_CLI_VERSION = '1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

const works = (binary: string): boolean => answers(binary, ['--version'], /temporal/i);

export function cachedTemporalPath(cacheDir: string): string {
  return join(cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

/**
 * Finds the Temporal CLI (which embeds the dev server and its Web UI): TEMPORAL_BIN, then
 * `temporal` on PATH, then the cached build; else builds it with `go install` into the cache
 * (a few minutes, once per machine). Without Go, says how to get one.
 */
export function resolveTemporalBinary(options: BinaryRequest): string {
  const explicit = explicitBinary(options, 'TEMPORAL_BIN', works);
  if (explicit) return explicit;
  const fromPath = onPath('temporal', options.path);
  if (fromPath && works(fromPath)) return fromPath;
  const cached = cachedTemporalPath(options.cacheDir);
  if (existsSync(cached) && works(cached)) return cached;
  waitForOtherBuild(options.cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`, options.log);
  if (existsSync(cached) && works(cached)) return cached;

  const go = findGo(options.path);
  if (!go) {
    throw new Error(
      'the Temporal CLI was not found and Go is not installed to build it.\n' +
        `  Either install Go 1.25+ and run again (Herald builds ${MODULE} into ${cached}),\n` +
        '  or put a `temporal` binary on PATH (https://docs.temporal.io/cli), or set TEMPORAL_BIN.',
    );
  }
  const staging = join(options.cacheDir, `temporal-${TEMPORAL_CLI_VERSION}.building-${process.pid}`);
  mkdirSync(staging, { recursive: true });
  options.log(`building the Temporal CLI v${TEMPORAL_CLI_VERSION} with Go (first run on this machine, a few minutes)...`);
  const started = Date.now();
  const build = spawnSync(go, ['install', MODULE], {
    env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`go install ${MODULE} failed (exit ${build.status}); see the output above`);
  }
  mkdirSync(join(options.cacheDir, `temporal-${TEMPORAL_CLI_VERSION}`), { recursive: true });
  renameSync(join(staging, 'temporal'), cached);
  rmSync(staging, { recursive: true, force: true });
  options.log(`built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s: ${cached}`);
  return cached;
}
