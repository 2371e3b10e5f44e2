import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Service {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  stop(timeoutMs?: number): Promise<void>;
}

export interface SpawnServiceOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Called with each output line (stdout and stderr); default prints `[name] line`. */
  onLine?: (line: string) => void;
}

/**
 * Starts a child in its own process group, so a terminal's Ctrl-C reaches only the parent,
 * which then stops children in order. Output is line-prefixed with the service name.
 */
export function spawnService(options: SpawnServiceOptions): Service {
  const child = spawn(options.command, options.args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const print = options.onLine ?? ((line: string) => process.stdout.write(`[${options.name}] ${line}\n`));
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', print);
  }
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (error) => {
      print(`failed to start: ${error.message}`);
      resolve(null);
    });
  });
  return {
    name: options.name,
    child,
    exited,
    async stop(timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${reason}`);
}

/** Whether a process with this pid exists (one of another user's counts: EPERM). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
