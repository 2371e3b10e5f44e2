import { describeShare } from '../describe.ts';
import { type CommandGroup, json, required, table } from './options.ts';

/** Shared templates: share one with a workspace, list its shares. */
export const templateCommands: CommandGroup = (svc) => ({
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
});
