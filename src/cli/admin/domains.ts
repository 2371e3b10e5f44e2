import { describeDomain, describeDomainCheck } from '../describe.ts';
import { type CommandGroup, integer, json, required, table, UsageError } from './options.ts';

/** Sending domains: add, list, verify. */
export const domainCommands: CommandGroup = (svc) => ({
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
});
