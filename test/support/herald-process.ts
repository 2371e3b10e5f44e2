import { MAIN_ENTRY, nodeFlagsFor } from '../../src/dev/paths.ts';
import { spawnService, waitFor, type Service } from '../../src/dev/processes.ts';
import type { TestStack } from './stack.ts';

export type HeraldKind = 'api' | 'worker' | 'smtp';

/** A Herald process of one kind running on a test stack, and where it listens. */
export interface HeraldProcess {
  kind: HeraldKind;
  service: Service;
  /** api: its base URL. */
  url?: string;
  /** smtp: the inbound listener's port. */
  port?: number;
}

/** The log line that says a process of `kind` is ready, and what it tells about where it listens. */
function readiness(kind: HeraldKind, line: string): Partial<HeraldProcess> | null {
  if (!line.startsWith('{')) return null;
  const entry = JSON.parse(line) as { msg?: string; url?: string; port?: number };
  if (kind === 'worker' && entry.msg === 'worker polling') return {};
  if (kind === 'api' && entry.msg === 'api listening') return { url: entry.url! };
  if (kind === 'smtp' && entry.msg === 'smtp listening') return { port: entry.port! };
  return null;
}

/**
 * `herald <kind>` as a real process on a test stack (the stack's env plus `env`); resolves once
 * it is ready: the worker polls its task queues, the api and smtp listeners accept connections.
 */
export function spawnHeraldProcess(
  stack: Pick<TestStack, 'env'>,
  kind: HeraldKind,
  env: Record<string, string> = {},
): Promise<HeraldProcess> {
  const processEnv = { ...process.env, ...stack.env, LOG_LEVEL: 'info', ...env };
  let ready: Partial<HeraldProcess> | null = null;
  const service = spawnService({
    name: kind,
    command: process.execPath,
    args: [...nodeFlagsFor(kind, processEnv), MAIN_ENTRY, kind],
    env: processEnv,
    onLine: (line) => {
      try {
        ready ??= readiness(kind, line);
        if (line.includes('"level":"error"') || line.includes('"level":"fatal"')) process.stdout.write(`[${kind}] ${line}\n`);
      } catch {
        // Not a JSON log line (a crash's stack trace, a Node warning): shown as it is.
        process.stdout.write(`[${kind}] ${line}\n`);
      }
    },
  });
  return waitFor(`the ${kind} process to be ready`, () => Promise.resolve(ready ? { kind, service, ...ready } : undefined), 90_000);
}
