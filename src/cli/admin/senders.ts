import { describeSender } from '../describe.ts';
import { type CommandGroup, json, required, table } from './options.ts';

/** The senders of a sending domain: add, list. */
export const senderCommands: CommandGroup = (svc) => ({
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
});
