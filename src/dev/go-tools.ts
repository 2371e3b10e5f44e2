import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The first `command` found on a PATH-style list of directories. */
export function onPath(command: string, path: string): string | undefined {
  return path
    .split(':')
    .filter(Boolean)
    .map((dir) => join(dir, command))
    .find((candidate) => existsSync(candidate));
}

/** The Go tool: on PATH, else where its installer puts it. */
export function findGo(path: string): string | undefined {
  return onPath('go', path) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

/** How the tooling asks for a binary it may have to build with Go. */
export interface BinaryRequest {
  /** A binary named by the operator (an environment variable); used as it is, or refused when it does not run. */
  explicit?: string | undefined;
  cacheDir: string;
  path: string;
  log: (line: string) => void;
}

/** The explicitly named binary when there is one (it must pass `works`, else `variable` is named in the error). */
export function explicitBinary(request: BinaryRequest, variable: string, works: (binary: string) => boolean): string | undefined {
  if (!request.explicit) return undefined;
  if (!works(request.explicit)) throw new Error(`${variable}=${request.explicit} does not run`);
  return request.explicit;
}

/** Whether `binary args` exits 0 and prints something matching `pattern`. */
export function answers(binary: string, args: string[], pattern: RegExp): boolean {
  const probe = spawnSync(binary, args, { encoding: 'utf8', timeout: 20_000 });
  return probe.status === 0 && pattern.test(`${probe.stdout}${probe.stderr}`);
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Waits while another live process builds the same tool into `cacheDir` (its staging folder is
 * `<stem>.building-<pid>`), so test runs started side by side build it once instead of each
 * compiling it on the same cores; returns when that build ended (the caller then looks for the
 * cached binary again, and builds it itself when the other build failed).
 */
export function waitForOtherBuild(cacheDir: string, stem: string, log: (line: string) => void): void {
  const builders = () =>
    (existsSync(cacheDir) ? readdirSync(cacheDir) : [])
      .map((entry) => (entry.startsWith(`${stem}.building-`) ? Number(entry.slice(stem.length + '.building-'.length)) : NaN))
      .filter((pid) => Number.isInteger(pid) && pid !== process.pid && isAlive(pid));
  let others = builders();
  if (others.length === 0) return;
  log(`waiting for process ${others.join(', ')}, which is building ${stem} already...`);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (others.length > 0) {
    Atomics.wait(pause, 0, 0, 2_000);
    others = builders();
  }
}
