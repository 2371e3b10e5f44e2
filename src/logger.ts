import { pino, type Logger as PinoLogger } from 'pino';

/**
 * Structured logging through pino: one JSON object per line (`time`, `level`, `msg`, fields) on
 * stderr. Fields named like secrets are redacted (whatever their nesting in the call, at the top
 * level of the line) so a key or signing secret never reaches a log line by accident, and Error
 * values keep their name, message and stack under any field name.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const SECRET_FIELD = /(authorization|api_?key|secret|password|token|private_?key)/i;

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(bindings: Record<string, unknown>): Logger;
}

function redact(fields: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (SECRET_FIELD.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message, stack: value.stack };
    else out[key] = value;
  }
  return out;
}

function wrap(instance: PinoLogger): Logger {
  return {
    debug: (message, fields) => instance.debug(fields ?? {}, message),
    info: (message, fields) => instance.info(fields ?? {}, message),
    warn: (message, fields) => instance.warn(fields ?? {}, message),
    error: (message, fields) => instance.error(fields ?? {}, message),
    child: (bindings) => wrap(instance.child(redact(bindings))),
  };
}

/** A logger at `level` with `bindings` on every line; `write` receives each line without its newline (stderr by default). */
export function createLogger(
  level: LogLevel,
  bindings: Record<string, unknown> = {},
  write: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): Logger {
  const instance = pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label: string) => ({ level: label }),
        log: (values: Record<string, unknown>) => redact(values),
      },
      // Errors are made plain by `redact` under any key; pino's own `err` serializer is not wanted.
      serializers: {},
    },
    { write: (chunk: string) => write(chunk.endsWith('\n') ? chunk.slice(0, -1) : chunk) },
  );
  return wrap(Object.keys(bindings).length > 0 ? instance.child(redact(bindings)) : instance);
}
