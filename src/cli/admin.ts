import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { createApiKeysService } from '../modules/auth/api-keys.service.ts';
import { createAutomationsAdmin } from '../modules/automations/automations.admin.ts';
import { createDashboardAuthService } from '../modules/dashboard/dashboard-auth.service.ts';
import { createDomainsService } from '../modules/domains/domains.service.ts';
import { createDomainVerificationRunner } from '../modules/domains/domain-verification.starter.ts';
import { createEncryptionAdmin } from '../modules/encryption/encryption.admin.ts';
import { createOrgsService } from '../modules/orgs/orgs.service.ts';
import { createReputationService } from '../modules/reputation/reputation.service.ts';
import { createTemplatesAdmin } from '../modules/templates/templates.admin.ts';
import {
  describeApiKey,
  describeAutomation,
  describeDomain,
  describeDomainCheck,
  describeOrg,
  describeSender,
  describeShare,
} from './describe.ts';

/** A usage mistake: reported on stderr with exit code 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

interface Command {
  usage: string;
  options: Options;
  positionals?: number;
  run(values: Values, positionals: string[]): Promise<{ json: unknown; text: string }>;
}

export interface AdminDeps {
  orm: MikroORM;
  config: Pick<Config, 'encryptionKey' | 'encryptionKeys' | 'temporal'> & { http: Pick<Config['http'], 'publicUrl'> };
}

const json = { json: { type: 'boolean' } } as const;

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

function integer(values: Values, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) {
    throw new UsageError(`--${name} must be a non-negative integer`);
  }
  return Number(value);
}

function rateOption(values: Values, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const rate = Number(value);
  if (typeof value !== 'string' || !Number.isFinite(rate) || rate < 0 || rate > 1)
    throw new UsageError(`--${name} must be a rate between 0 and 1`);
  return rate;
}

/** The reputation policy fields given on the command line. */
function policyOptions(values: Values): Record<string, unknown> {
  const pause = values.pause as string | undefined;
  if (pause !== undefined && pause !== 'broadcast' && pause !== 'all') throw new UsageError('--pause must be broadcast or all');
  const fields = {
    pause,
    window_hours: integer(values, 'window-hours'),
    min_volume: integer(values, 'min-volume'),
    max_bounce_rate: rateOption(values, 'max-bounce-rate'),
    max_complaint_rate: rateOption(values, 'max-complaint-rate'),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

function onOff(values: Values, name: string): boolean | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`--${name} must be on or off`);
}

/** The JSON document of `--file` (an automation definition). */
function jsonFile(values: Values, name: string): unknown {
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

function table(rows: Record<string, Cell>[], columns: string[]): string {
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

function services(deps: AdminDeps) {
  return {
    orgs: createOrgsService(deps),
    keys: createApiKeysService(deps),
    domains: createDomainsService({ orm: deps.orm, encryptionKey: deps.config.encryptionKey }),
    domainVerification: createDomainVerificationRunner(deps),
    automations: createAutomationsAdmin(deps),
    templates: createTemplatesAdmin(deps),
    reputation: createReputationService(deps),
    dashboard: createDashboardAuthService(deps),
    publicUrl: deps.config.http.publicUrl,
    encryption: createEncryptionAdmin({ em: deps.orm.em.fork(), keys: deps.config.encryptionKeys }),
  };
}

type Services = ReturnType<typeof services>;

/** Every admin command; `svc` is only called once a command runs (usage needs no database). */
function commands(svc: () => Services): Record<string, Command> {
  return {
    'org create': {
      usage: 'org create --name N [--slug S] [--credits N] [--overage]',
      options: { ...json, name: { type: 'string' }, slug: { type: 'string' }, credits: { type: 'string' }, overage: { type: 'boolean' } },
      async run(values) {
        const slug = values.slug as string | undefined;
        const credits = integer(values, 'credits');
        const {
          org,
          owner,
          credits: balance,
        } = await svc().orgs.createOrganization({
          name: required(values, 'name'),
          ...(slug !== undefined ? { slug } : {}),
          ...(credits !== undefined ? { credits } : {}),
          overage: values.overage === true,
        });
        return {
          json: { ...describeOrg({ org, credits: balance }), owner_user_id: owner.id },
          text: `created workspace ${org.id} (${org.slug})`,
        };
      },
    },
    'org list': {
      usage: 'org list',
      options: { ...json },
      async run() {
        const rows = (await svc().orgs.listOrganizations()).map(describeOrg);
        return { json: { data: rows }, text: table(rows, ['id', 'slug', 'name', 'credits', 'overage']) };
      },
    },
    invite: {
      usage: 'invite --org ID --email E [--role owner|member]',
      options: { ...json, org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
      async run(values) {
        const role = values.role ?? 'member';
        if (role !== 'owner' && role !== 'member') throw new UsageError('--role must be owner or member');
        const services = svc();
        const { token, invite } = await services.dashboard.invite({
          orgId: required(values, 'org'),
          email: required(values, 'email'),
          role,
        });
        const url = `${services.publicUrl}/dashboard/invite/${token}`;
        return {
          json: {
            invite_id: invite.id,
            org_id: invite.orgId,
            email: invite.email,
            role: invite.role,
            url,
            expires_at: invite.expiresAt.toISOString(),
          },
          text: `invitation for ${invite.email} (${invite.role}), valid until ${invite.expiresAt.toISOString()}:\n${url}`,
        };
      },
    },
    'sign-in-link': {
      usage: 'sign-in-link --org ID [--email E]   (one use, 15 minutes; the owner when no email)',
      options: { ...json, org: { type: 'string' }, email: { type: 'string' } },
      async run(values) {
        const services = svc();
        const { token, link } = await services.dashboard.signInLink({
          orgId: required(values, 'org'),
          ...(typeof values.email === 'string' ? { email: values.email } : {}),
        });
        const url = `${services.publicUrl}/dashboard/sign-in/${token}`;
        return {
          json: { org_id: link.orgId, email: link.email, url, expires_at: link.expiresAt.toISOString() },
          text: `sign-in link for ${link.email}, valid until ${link.expiresAt.toISOString()}:\n${url}`,
        };
      },
    },
    'key create': {
      usage: 'key create --org ID --scopes LIST|all [--mode live|test] [--name N] [--rate-limit-per-minute N] [--burst N]',
      options: {
        ...json,
        org: { type: 'string' },
        scopes: { type: 'string' },
        mode: { type: 'string' },
        name: { type: 'string' },
        'rate-limit-per-minute': { type: 'string' },
        burst: { type: 'string' },
      },
      async run(values) {
        const mode = values.mode ?? 'test';
        if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test');
        const scopes = required(values, 'scopes')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const perMinute = integer(values, 'rate-limit-per-minute');
        const burst = integer(values, 'burst');
        const { apiKey, key } = await svc().keys.createApiKey({
          orgId: required(values, 'org'),
          scopes,
          mode,
          ...(typeof values.name === 'string' ? { name: values.name } : {}),
          ...(perMinute !== undefined ? { rateLimitPerMinute: perMinute } : {}),
          ...(burst !== undefined ? { burst } : {}),
        });
        return {
          json: { ...describeApiKey(apiKey), key },
          text: `created key ${apiKey.id}\n${key}\n(the secret is shown once; store it now)`,
        };
      },
    },
    'key revoke': {
      usage: 'key revoke ID',
      options: { ...json },
      positionals: 1,
      async run(_values, [id]) {
        const apiKey = await svc().keys.revokeApiKey(id!);
        return { json: describeApiKey(apiKey), text: `revoked key ${apiKey.id}` };
      },
    },
    'key list': {
      usage: 'key list [--org ID]',
      options: { ...json, org: { type: 'string' } },
      async run(values) {
        const rows = (await svc().keys.listApiKeys(values.org as string | undefined)).map(describeApiKey);
        return { json: { data: rows }, text: table(rows, ['id', 'org_id', 'prefix', 'mode', 'name', 'revoked_at']) };
      },
    },
    'domain add': {
      usage: 'domain add --org ID --domain D [--verified] [--default] [--daily-cap N] [--warmup new|existing|off]',
      options: {
        ...json,
        org: { type: 'string' },
        domain: { type: 'string' },
        verified: { type: 'boolean' },
        default: { type: 'boolean' },
        'daily-cap': { type: 'string' },
        warmup: { type: 'string' },
      },
      async run(values) {
        const dailyCap = integer(values, 'daily-cap');
        const warmup = values.warmup as string | undefined;
        if (warmup !== undefined && !['new', 'existing', 'off'].includes(warmup))
          throw new UsageError('--warmup must be new, existing or off');
        const domain = await svc().domains.addDomain({
          orgId: required(values, 'org'),
          domain: required(values, 'domain'),
          verified: values.verified === true,
          ...(values.default === true ? { isDefault: true } : {}),
          ...(dailyCap !== undefined ? { dailyCap } : {}),
          ...(warmup !== undefined ? { warmup: warmup as 'new' | 'existing' | 'off' } : {}),
        });
        return { json: describeDomain(domain), text: `added domain ${domain.id} (${domain.domain}, ${domain.status})` };
      },
    },
    'reputation show': {
      usage: "reputation show --org ID   (the workspace's reputation policy and pause)",
      options: { ...json, org: { type: 'string' } },
      async run(values) {
        const status = await svc().reputation.status(required(values, 'org'));
        const reason = (status.pause?.reason as string | undefined) ?? '';
        return { json: status, text: status.paused_at ? `paused since ${status.paused_at}: ${reason}` : 'sending' };
      },
    },
    'reputation resume': {
      usage: "reputation resume --org ID   (lift the workspace's reputation pause; its window starts again)",
      options: { ...json, org: { type: 'string' } },
      async run(values) {
        const org = required(values, 'org');
        const record = await svc().reputation.resume(org, 'operator');
        return { json: { org_id: org, ...record }, text: `resumed sending of workspace ${org}` };
      },
    },
    'reputation policy': {
      usage:
        'reputation policy --org ID [--pause broadcast|all] [--window-hours N] [--min-volume N] [--max-bounce-rate R] [--max-complaint-rate R] [--reset]',
      options: {
        ...json,
        org: { type: 'string' },
        pause: { type: 'string' },
        'window-hours': { type: 'string' },
        'min-volume': { type: 'string' },
        'max-bounce-rate': { type: 'string' },
        'max-complaint-rate': { type: 'string' },
        reset: { type: 'boolean' },
      },
      async run(values) {
        const org = required(values, 'org');
        const current = values.reset === true ? {} : (await svc().reputation.status(org)).policy;
        const policy = await svc().reputation.setPolicy(org, { ...current, ...policyOptions(values) });
        return { json: policy, text: `reputation policy of ${org}: ${JSON.stringify(policy)}` };
      },
    },
    'domain list': {
      usage: 'domain list [--org ID]',
      options: { ...json, org: { type: 'string' } },
      async run(values) {
        const rows = (await svc().domains.listDomains(values.org as string | undefined)).map(describeDomain);
        return { json: { data: rows }, text: table(rows, ['id', 'org_id', 'domain', 'status', 'is_default', 'daily_cap']) };
      },
    },
    'domain verify': {
      usage: 'domain verify ID [--timeout SECONDS]',
      options: { ...json, timeout: { type: 'string' } },
      positionals: 1,
      async run(values, [id]) {
        if (!/^[0-9a-fA-F]{24}$/.test(id!)) throw new UsageError('ID must be a 24-character hexadecimal domain id');
        const timeout = integer(values, 'timeout') ?? 60;
        if (timeout < 1) throw new UsageError('--timeout must be at least 1');
        const check = describeDomainCheck(await svc().domainVerification.verify(id!.toLowerCase(), timeout * 1000));
        const rows = Object.entries(check.records).map(([record, r]) => ({
          record,
          required: r.required ? 'yes' : 'no',
          status: r.status,
          type: r.type,
          name: r.name,
          found: r.found && r.found.length > 60 ? `${r.found.slice(0, 57)}...` : r.found,
        }));
        const toPublish = Object.entries(check.records)
          .filter(([, r]) => r.status !== 'verified')
          .map(([record, r]) => `  ${record}: ${r.type} ${r.name} ${r.value}`);
        const text = [
          `domain ${check.id} (${check.domain}): ${check.previous_status} -> ${check.status}`,
          table(rows, ['record', 'required', 'status', 'type', 'name', 'found']),
          ...(toPublish.length > 0 ? ['publish:', ...toPublish] : []),
        ].join('\n');
        return { json: check, text };
      },
    },
    'sender add': {
      usage: 'sender add --domain ID --email E --name N [--default]',
      options: { ...json, domain: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' }, default: { type: 'boolean' } },
      async run(values) {
        const sender = await svc().domains.addSender({
          domainId: required(values, 'domain'),
          email: required(values, 'email'),
          name: required(values, 'name'),
          ...(values.default === true ? { isDefault: true } : {}),
        });
        return { json: describeSender(sender), text: `added sender ${sender.id} (${sender.email})` };
      },
    },
    'sender list': {
      usage: 'sender list --domain ID',
      options: { ...json, domain: { type: 'string' } },
      async run(values) {
        const rows = (await svc().domains.listSenders(required(values, 'domain'))).map(describeSender);
        return { json: { data: rows }, text: table(rows, ['id', 'email', 'name', 'is_default']) };
      },
    },
    'automation create': {
      usage: 'automation create --org ID --name N [--file DEFINITION.json] [--description D] [--status S]',
      options: {
        ...json,
        org: { type: 'string' },
        name: { type: 'string' },
        file: { type: 'string' },
        description: { type: 'string' },
        status: { type: 'string' },
        trigger: { type: 'string' },
      },
      async run(values) {
        if (values.trigger !== undefined) {
          throw new UsageError('--trigger is gone: the trigger is part of the definition; give it with --file (docs/automations.md)');
        }
        const automation = await svc().automations.createAutomation({
          orgId: required(values, 'org'),
          name: required(values, 'name'),
          ...(values.file !== undefined ? { definition: jsonFile(values, 'file') } : {}),
          ...(typeof values.description === 'string' ? { description: values.description } : {}),
          ...(typeof values.status === 'string' ? { status: values.status } : {}),
        });
        const published = automation.definitionId ? ` with its definition (version ${automation.version})` : ' without a definition';
        return { json: describeAutomation(automation), text: `created automation ${automation.id}${published}` };
      },
    },
    'automation update': {
      usage: 'automation update ID --file DEFINITION.json   (publishes the next version; runs in flight keep theirs)',
      options: { ...json, file: { type: 'string' } },
      positionals: 1,
      async run(values, [id]) {
        const automation = await svc().automations.publishDefinition(id!, jsonFile(values, 'file'));
        return { json: describeAutomation(automation), text: `published version ${automation.version} of automation ${automation.id}` };
      },
    },
    'automation export': {
      usage: 'automation export ID   (the published definition, as --file takes it)',
      options: { ...json },
      positionals: 1,
      async run(_values, [id]) {
        const { automationId, version, definition } = await svc().automations.exportDefinition(id!);
        return { json: { automation_id: automationId, version, definition }, text: JSON.stringify(definition, null, 2) };
      },
    },
    'automation list': {
      usage: 'automation list --org ID',
      options: { ...json, org: { type: 'string' } },
      async run(values) {
        const rows = (await svc().automations.listAutomations(required(values, 'org'))).map(describeAutomation);
        return { json: { data: rows }, text: table(rows, ['id', 'name', 'status', 'trigger_type', 'version']) };
      },
    },
    'template share': {
      usage: 'template share --template ID --org ID',
      options: { ...json, template: { type: 'string' }, org: { type: 'string' } },
      async run(values) {
        const share = await svc().templates.shareTemplate({
          templateId: required(values, 'template'),
          orgId: required(values, 'org'),
        });
        return { json: describeShare(share), text: `shared template ${share.templateId} with ${share.orgId}` };
      },
    },
    'template shares': {
      usage: 'template shares --template ID',
      options: { ...json, template: { type: 'string' } },
      async run(values) {
        const rows = (await svc().templates.listShares(required(values, 'template'))).map(describeShare);
        return { json: { data: rows }, text: table(rows, ['id', 'org_id', 'hidden']) };
      },
    },
    'org postal-address': {
      usage: 'org postal-address --org ID (--address "Street, City" | --clear)',
      options: { ...json, org: { type: 'string' }, address: { type: 'string' }, clear: { type: 'boolean' } },
      async run(values) {
        if (values.clear !== true && typeof values.address !== 'string') throw new UsageError('--address or --clear is required');
        const address = values.clear === true ? null : String(values.address).replace(/\\n/g, '\n');
        const { org, credits } = await svc().orgs.setPostalAddress(required(values, 'org'), address);
        return {
          json: describeOrg({ org, credits }),
          text: `workspace ${org.id}: postal address ${org.postalAddress ? JSON.stringify(org.postalAddress) : 'none'}`,
        };
      },
    },
    'encryption status': {
      usage: 'encryption status   (key ids of the ring, the key the database is checked against, sealed values per place)',
      options: { ...json },
      async run() {
        return svc().encryption.status();
      },
    },
    'encryption re-encrypt': {
      usage: 'encryption re-encrypt [--batch-size N]   (every sealed value under the newest key; resumable)',
      options: { ...json, 'batch-size': { type: 'string' } },
      async run(values) {
        const batchSize = integer(values, 'batch-size') ?? 500;
        if (batchSize < 1) throw new UsageError('--batch-size must be at least 1');
        return svc().encryption.reEncrypt(batchSize);
      },
    },
    'credits set': {
      usage: 'credits set --org ID --amount N [--overage on|off]',
      options: { ...json, org: { type: 'string' }, amount: { type: 'string' }, overage: { type: 'string' } },
      async run(values) {
        const amount = integer(values, 'amount');
        if (amount === undefined) throw new UsageError('--amount is required');
        const { org, credits: balance } = await svc().orgs.setCredits(required(values, 'org'), amount, onOff(values, 'overage'));
        return {
          json: describeOrg({ org, credits: balance }),
          text: `workspace ${org.id}: ${balance.balance} credits, overage ${org.overageEnabled ? 'on' : 'off'}`,
        };
      },
    },
  };
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
    const connected = services(deps);
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
