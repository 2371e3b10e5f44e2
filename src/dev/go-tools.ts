import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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

/** Whether `binary args` exits 0 and prints something matching `pattern`. */
export function answers(binary: string, args: string[], pattern: RegExp): boolean {
  const probe = spawnSync(binary, args, { encoding: 'utf8', timeout: 20_000 });
  return probe.status === 0 && pattern.test(`${probe.stdout}${probe.stderr}`);
}
