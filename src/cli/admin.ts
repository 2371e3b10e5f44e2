import { parseArgs } from 'node:util';
import { AppError } from '../errors.ts';
import { automationCommands } from './admin/automations.ts';
import { dashboardAccessCommands } from './admin/dashboard-access.ts';
import { domainCommands } from './admin/domains.ts';
import { encryptionCommands } from './admin/encryption.ts';
import { keyCommands } from './admin/keys.ts';
import { UsageError, type Command, type Values } from './admin/options.ts';
import { orgCommands } from './admin/orgs.ts';
import { reputationCommands } from './admin/reputation.ts';
import { senderCommands } from './admin/senders.ts';
import { adminServices, type AdminDeps, type AdminServices } from './admin/services.ts';
import { templateCommands } from './admin/templates.ts';

export { UsageError } from './admin/options.ts';
export type { AdminDeps } from './admin/services.ts';

/** The order of the usage text; a command of a group not listed here follows these. */
const USAGE_ORDER = [
  'org create',
  'org list',
  'invite',
  'sign-in-link',
  'key create',
  'key revoke',
  'key list',
  'domain add',
  'reputation show',
  'reputation resume',
  'reputation policy',
  'domain list',
  'domain verify',
  'sender add',
  'sender list',
  'automation create',
  'automation update',
  'automation export',
  'automation list',
  'template share',
  'template shares',
  'org postal-address',
  'encryption status',
  'encryption re-encrypt',
  'credits set',
];

/** Every admin command, in usage order; `svc` is only called once a command runs (usage needs no database). */
function commands(svc: () => AdminServices): Record<string, Command> {
  const groups = [
    orgCommands,
    dashboardAccessCommands,
    keyCommands,
    domainCommands,
    senderCommands,
    reputationCommands,
    automationCommands,
    templateCommands,
    encryptionCommands,
  ];
  const all = Object.fromEntries(groups.flatMap((group) => Object.entries(group(svc))));
  const listed = USAGE_ORDER.filter((name) => name in all);
  const rest = Object.keys(all).filter((name) => !USAGE_ORDER.includes(name));
  return Object.fromEntries([...listed, ...rest].map((name) => [name, all[name]!]));
}

export function adminUsage(): string {
  const lines = Object.values(
    commands(() => {
      throw new Error('usage only');
    }),
  ).map((c) => `  herald admin ${c.usage} [--json]`);
  return `usage:\n${lines.join('\n')}`;
}

/**
 * The command `argv` names: one word (`invite`, `sign-in-link`) or a noun and a verb
 * (`org create`); the words after it are its options and positionals.
 */
function findCommand(
  table: Record<string, Command>,
  argv: string[],
): { name: string; spec: Command; rest: string[] } | { problem: string } {
  const [first, second, ...others] = argv;
  if (first === undefined || first.startsWith('-')) return { problem: 'missing command' };
  const single = table[first];
  if (single) return { name: first, spec: single, rest: argv.slice(1) };
  const pair = second !== undefined ? table[`${first} ${second}`] : undefined;
  if (pair) return { name: `${first} ${second}`, spec: pair, rest: others };
  const verbs = Object.keys(table)
    .filter((n) => n.startsWith(`${first} `))
    .map((n) => n.slice(first.length + 1));
  if (verbs.length > 0 && (second === undefined || second.startsWith('-')))
    return { problem: `"${first}" needs one of: ${verbs.join(', ')}` };
  const words = second === undefined || second.startsWith('-') ? first : `${first} ${second}`;
  return { problem: `unknown command "${words}"` };
}

/** Every field problem an error lists (a definition's, one per line), after its message. */
function problemLines(error: AppError): string[] {
  const fields = error.details?.fields;
  if (!Array.isArray(fields) || fields.length < 2) return [];
  return (fields as { path?: unknown; message?: unknown }[]).map((field) => `  ${String(field.path)}: ${String(field.message)}`);
}

export interface AdminOutput {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * Runs one `herald admin` command. With --json, stdout holds exactly one JSON object (the
 * result, or `{error: {code, message}}`). Usage mistakes and invalid values exit 2; other
 * failures (not found, conflict) exit 1.
 */
export async function runAdmin(argv: string[], connect: () => Promise<AdminDeps>): Promise<AdminOutput> {
  const wantsJson = argv.includes('--json');
  const fail = (code: string, message: string, exitCode: number): AdminOutput => ({
    stdout: wantsJson ? JSON.stringify({ error: { code, message } }) + '\n' : '',
    stderr: `herald admin: ${message}\n${exitCode === 2 ? adminUsage() + '\n' : ''}`,
    exitCode,
  });
  const lookup = findCommand(
    commands(() => {
      throw new Error('usage only');
    }),
    argv,
  );
  if ('problem' in lookup) return fail('usage', lookup.problem, 2);
  const { name, spec, rest } = lookup;
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options: spec.options, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (error) {
    return fail('usage', (error as Error).message, 2);
  }
  if (parsed.positionals.length !== (spec.positionals ?? 0)) {
    return fail('usage', `usage: herald admin ${spec.usage}`, 2);
  }
  let deps: AdminDeps | undefined;
  try {
    deps = await connect();
    const connected = adminServices(deps);
    const command = commands(() => connected)[name]!;
    const result = await command.run(parsed.values, parsed.positionals);
    return {
      stdout: (wantsJson ? JSON.stringify(result.json) : result.text) + '\n',
      stderr: '',
      exitCode: 0,
    };
  } catch (error) {
    if (error instanceof UsageError) return fail('usage', error.message, 2);
    if (error instanceof AppError) {
      return fail(error.code, [error.message, ...problemLines(error)].join('\n'), error.code === 'invalid_request' ? 2 : 1);
    }
    throw error;
  } finally {
    await deps?.orm.close();
  }
}
