import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDevEnv } from '../config.ts';
import { resolveChromium } from './chromium.ts';
import { cacheDir, REPO_ROOT } from './paths.ts';
import { resolveSeaweedfsBinary } from './seaweedfs-binary.ts';
import { resolveTemporalBinary } from './temporal-binary.ts';

const say = (line: string) => process.stdout.write(`[herald test] ${line}\n`);

function run(label: string, script: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = Date.now();
  say(`${label}...`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, script), ...args], { cwd: REPO_ROOT, env, stdio: 'inherit' });
    child.on('exit', (code) => {
      say(`${label}: ${code === 0 ? 'ok' : `failed (exit ${code})`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      resolve(code ?? 1);
    });
  });
}

/**
 * `herald test` (npm test): makes sure the Temporal CLI and SeaweedFS exist (building each once per
 * machine) and Chromium for the browser tests (installing Debian's package once, as root),
 * then typecheck, lint, the formatting check, the architecture and duplication checks and the vitest suite. The suite's global setup starts its own
 * Temporal dev server and uses its own databases, so dev data is never touched.
 */
export async function runTests(vitestArgs: string[]): Promise<number> {
  const env = loadDevEnv();
  const started = Date.now();
  const temporalBin = resolveTemporalBinary({ explicit: env.TEMPORAL_BIN, cacheDir: cacheDir(env), path: env.PATH, log: say });
  // The S3-compatible server the blob store's tests run against (built once per machine, like the Temporal CLI).
  const seaweedfsBin = resolveSeaweedfsBinary({ explicit: env.SEAWEEDFS_BIN, cacheDir: cacheDir(env), path: env.PATH, log: say });
  // CHROMIUM_BIN is read from process.env: DevEnv (src/config.ts) keeps only the keys it declares.
  const chromiumBin = resolveChromium({ explicit: process.env.CHROMIUM_BIN, log: say });
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_BIN: temporalBin,
    SEAWEEDFS_BIN: seaweedfsBin,
    CHROMIUM_BIN: chromiumBin,
    NODE_ENV: 'test',
  };
  const scratch = mkdtempSync(join(tmpdir(), 'herald-test-report-'));
  const report = join(scratch, 'vitest.json');
  const steps: [string, string, string[]][] = [
    ['typecheck', 'node_modules/typescript/bin/tsc', ['--noEmit', '-p', 'tsconfig.json']],
    ['lint', 'node_modules/eslint/bin/eslint.js', ['--max-warnings', '0', '.']],
    // One formatting, 140 columns (.prettierrc.json); `npm run format` rewrites what this refuses.
    ['format', 'node_modules/prettier/bin/prettier.cjs', ['--check', '--log-level', 'warn', '.']],
    // The layers' import rules (.dependency-cruiser.cjs) and no copied code (.jscpd.json): CONTRIBUTING.md.
    [
      'architecture',
      'node_modules/dependency-cruiser/bin/dependency-cruise.mjs',
      ['src', 'db', 'workflows', 'activities', '--config', '.dependency-cruiser.cjs'],
    ],
    ['duplication', 'node_modules/jscpd/bin/jscpd', ['--config', '.jscpd.json']],
    [
      'tests',
      'node_modules/vitest/vitest.mjs',
      ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...vitestArgs],
    ],
  ];
  let failed = 0;
  for (const [label, script, args] of steps) {
    if ((await run(label, script, args, childEnv)) !== 0) failed += 1;
  }
  say(`${failed === 0 ? 'all steps passed' : `${failed} step(s) failed`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // The plain closing line CI reads: test counts, with a failed typecheck or lint counted as a failure.
  const counts = existsSync(report)
    ? (JSON.parse(readFileSync(report, 'utf8')) as { numPassedTests: number; numFailedTests: number; numPendingTests: number })
    : { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0 };
  rmSync(scratch, { recursive: true, force: true });
  const stepFailures = failed - (counts.numFailedTests > 0 ? 1 : 0);
  process.stdout.write(
    `${counts.numPassedTests} passed, ${counts.numFailedTests + Math.max(0, stepFailures)} failed, ${counts.numPendingTests} skipped\n`,
  );
  return failed === 0 ? 0 : 1;
}
