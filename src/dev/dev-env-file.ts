import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * `.data/dev.env` (mode 0600): the dev stack's generated secret and resolved connection
 * settings. `npm start` writes it; `npx herald admin|migrate` read it in development, so the
 * operator CLI talks to the running dev stack without extra flags.
 */
export function readEnvFile(file: string): Record<string, string> {
  const values: Record<string, string> = {};
  if (!existsSync(file)) return values;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match?.[1]) values[match[1]] = match[2] ?? '';
  }
  return values;
}

export function writeEnvFile(file: string, values: Record<string, string>): void {
  mkdirSync(dirname(file), { recursive: true });
  const body =
    Object.entries(values)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n';
  writeFileSync(file, body, { mode: 0o600 });
}

/** The dev encryption key, generated on first use and kept across starts. */
export function ensureDevEncryptionKey(file: string): string {
  const values = readEnvFile(file);
  if (!values.HERALD_ENCRYPTION_KEY) {
    values.HERALD_ENCRYPTION_KEY = randomBytes(32).toString('base64');
    writeEnvFile(file, values);
  }
  return values.HERALD_ENCRYPTION_KEY;
}

export function updateEnvFile(file: string, updates: Record<string, string>): void {
  writeEnvFile(file, { ...readEnvFile(file), ...updates });
}
