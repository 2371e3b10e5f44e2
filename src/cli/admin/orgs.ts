import { describeOrg } from '../describe.ts';
import { type CommandGroup, integer, json, onOff, required, table, UsageError } from './options.ts';

/** Workspaces: create, list, postal address, credits. */
export const orgCommands: CommandGroup = (svc) => ({
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
});
