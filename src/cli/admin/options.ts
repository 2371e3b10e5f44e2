import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';
import type { AdminServices } from './services.ts';

/** A usage mistake: reported on stderr with exit code 2. */
export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

/** One `herald admin` command: its usage line, its options, how many positionals it takes, what it does. */
export interface Command {
  usage: string;
  options: Options;
  positionals?: number;
  run(values: Values, positionals: string[]): Promise<{ json: unknown; text: string }>;
}

/** A group's commands by name; `svc` is only called once a command runs (usage needs no database). */
export type CommandGroup = (svc: () => AdminServices) => Record<string, Command>;

export const json = { json: { type: 'boolean' } } as const;

export function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function integer(values: Values, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) {
    throw new UsageError(`--${name} must be a non-negative integer`);
  }
  return Number(value);
}

export function rateOption(values: Values, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const rate = Number(value);
  if (typeof value !== 'string' || !Number.isFinite(rate) || rate < 0 || rate > 1)
    throw new UsageError(`--${name} must be a rate between 0 and 1`);
  return rate;
}

export function onOff(values: Values, name: string): boolean | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`--${name} must be on or off`);
}

/** The JSON document of `--file` (an automation definition). */
export function jsonFile(values: Values, name: string): unknown {
  const path = required(values, name);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--${name} ${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`--${name} ${path} is not JSON: ${(error as Error).message}`);
  }
}

type Cell = string | number | boolean | string[] | null | undefined;

/** Rows as an aligned text table (the output without --json). */
export function table(rows: Record<string, Cell>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((c) => String(row[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}
