import { describeAutomation } from '../describe.ts';
import { type CommandGroup, json, jsonFile, required, table, UsageError } from './options.ts';

/** Automations: create, publish a definition, export, list. */
export const automationCommands: CommandGroup = (svc) => ({
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
});
