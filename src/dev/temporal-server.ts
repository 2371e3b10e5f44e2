import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { searchAttributeCliSpecs } from '../temporal/search-attributes.ts';
import { isListening } from './ports.ts';
import { spawnService, waitFor, type Service } from './processes.ts';

export interface TemporalDevServer {
  address: string;
  namespace: string;
  uiUrl: string | null;
  service: Service;
  stop(): Promise<void>;
}

export interface TemporalDevServerOptions {
  binary: string;
  port: number;
  namespace: string;
  /** Web UI port; null runs headless. */
  uiPort: number | null;
  /** SQLite file for persisted state; null keeps everything in memory. */
  dbFile: string | null;
  /** Where the server's own log goes; only its error lines are echoed to the console. */
  logFile: string;
  readyTimeoutMs?: number;
  /**
   * What "started" means: `namespace` (default) waits until the namespace answers and registers
   * the search attributes; `port` only waits for the frontend port, leaving both to the caller
   * (the dev supervisor, which never loads the Temporal client itself).
   */
  readiness?: 'namespace' | 'port';
}

/** How many times a start that lost a port race is tried again (see `startOnce`). */
const PORT_RACE_RETRIES = 2;

/**
 * Starts `temporal server start-dev` on 127.0.0.1, waits until the namespace answers, and
 * registers Herald's search attributes (the CLI flag only applies to a new namespace, so a
 * persisted database needs the explicit registration too).
 *
 * The dev server binds internal ports (history, matching, worker, metrics) it picks itself at
 * start; on a busy machine another process can take one between the pick and the bind, and the
 * server exits with "address already in use". Such a start is tried again; any other early exit
 * fails at once, with the server's last output lines in the error.
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (!(error instanceof EarlyExitError) || !error.lostPortRace || attempt >= PORT_RACE_RETRIES) throw error;
      process.stderr.write(`[temporal] a port was taken while the dev server started; starting it again\n`);
    }
  }
}

class EarlyExitError extends Error {
  readonly lastLines: string[];

  constructor(code: number | null, lastLines: string[]) {
    const tail = lastLines.length > 0 ? `; its last output:\n${lastLines.join('\n')}` : '';
    super(`the Temporal dev server exited with code ${code} while starting${tail}`);
    this.lastLines = lastLines;
  }

  get lostPortRace(): boolean {
    return this.lastLines.some((line) => /address already in use/i.test(line));
  }
}

const KEPT_LINES = 20;

async function startOnce(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', 'warn'];
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFile) {
    mkdirSync(dirname(options.dbFile), { recursive: true });
    args.push(
      '--db-filename',
      options.dbFile,
      '--sqlite-pragma',
      'journal_mode=WAL',
      '--sqlite-pragma',
      'synchronous=NORMAL',
      '--sqlite-pragma',
      'busy_timeout=5000',
    );
  }
  if (options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const spec of searchAttributeCliSpecs()) args.push('--search-attribute', `${spec.name}=${spec.type}`);
  args.push('--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true');
  args.push('--dynamic-config-value', 'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true');
  // Update-with-start: the send API waits briefly for the hand-off to the relay.
  args.push('--dynamic-config-value', 'frontend.enableExecuteMultiOperation=true');

  mkdirSync(dirname(options.logFile), { recursive: true });
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const lastLines: string[] = [];
  const service = spawnService({
    name: 'temporal',
    command: options.binary,
    args,
    onLine: (line) => {
      log.write(line + '\n');
      lastLines.push(line);
      if (lastLines.length > KEPT_LINES) lastLines.shift();
      if (/level=(ERROR|FATAL)/.test(line)) process.stderr.write(`[temporal] ${line}\n`);
    },
  });
  void service.exited.then(() => log.end());
  const address = `127.0.0.1:${options.port}`;
  const exitedEarly = service.exited.then(async (code) => {
    // 'exit' can come before the last lines are read from its pipes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    throw new EarlyExitError(code, lastLines);
  });
  try {
    await Promise.race([
      exitedEarly,
      waitFor(
        `the Temporal dev server on ${address}`,
        async () => {
          if (options.readiness === 'port') return (await isListening('127.0.0.1', options.port)) ? true : undefined;
          // Loaded here only: the dev supervisor (readiness 'port') never loads the client.
          const { ensureTemporalReady } = await import('../temporal/search-attribute-registry.ts');
          await ensureTemporalReady({ address, tls: null }, options.namespace);
          return true;
        },
        options.readyTimeoutMs ?? 90_000,
        300,
      ),
    ]);
  } catch (error) {
    await service.stop();
    throw error;
  }
  exitedEarly.catch(() => {});
  return {
    address,
    namespace: options.namespace,
    uiUrl: options.uiPort === null ? null : `http://127.0.0.1:${options.uiPort}`,
    service,
    stop: () => service.stop(15_000),
  };
}
