import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DevEnv } from '../config.ts';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const MAIN_ENTRY = join(REPO_ROOT, 'src/cli/main.ts');

// The Node flags of each process, shared with the launcher (plain JavaScript: src/cli/herald.mjs).
export { nodeFlagsFor } from '../cli/node-flags.mjs';

export function dataDir(env: DevEnv): string {
  return env.HERALD_DATA_DIR ?? join(REPO_ROOT, '.data');
}

/** Build caches live outside the clone, so a fresh clone on the same machine reuses them. */
export function cacheDir(env: DevEnv): string {
  return env.HERALD_CACHE_DIR ?? join(env.HOME || homedir(), '.cache', 'herald');
}
