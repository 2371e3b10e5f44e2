import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/dev/paths.ts';

/** Lints a throwaway file placed inside workflows/, where the fence applies. */
describe('the workflow fence (eslint)', () => {
  const file = join(REPO_ROOT, 'workflows', `fence-probe-${process.pid}.ts`);
  afterAll(() => rmSync(file, { force: true }));

  async function lint(source: string): Promise<string[]> {
    writeFileSync(file, source);
    const [result] = await new ESLint({ cwd: REPO_ROOT }).lintFiles([file]);
    return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
  }

  it('allows @temporalio/workflow and its own files, types included', async () => {
    const messages = await lint(
      [
        "import { proxyActivities } from '@temporalio/workflow';",
        "import type { MaintenanceActivities } from './maintenance.ts';",
        "import { cleanupIdempotencyRecords } from './maintenance.ts';",
        'export const probe = [proxyActivities, cleanupIdempotencyRecords];',
        'export type Probe = MaintenanceActivities;',
        '',
      ].join('\n'),
    );
    expect(messages).toEqual([]);
  });

  it.each([
    ["import { readFileSync } from 'node:fs';", 'readFileSync'],
    ["import { MikroORM } from '@mikro-orm/core';", 'MikroORM'],
    ["import { loadConfig } from '../src/config.ts';", 'loadConfig'],
    ["import { newId } from '../db/ids.ts';", 'newId'],
    ["import { createActivities } from '../activities/index.ts';", 'createActivities'],
    ["import type { HeraldActivities } from '../activities/index.ts';", 'undefined as unknown as HeraldActivities'],
    ["import type { Domain } from '../db/entities/index.ts';", 'undefined as unknown as Domain'],
  ])('refuses %s', async (line, name) => {
    const messages = await lint(`${line}\nexport const probe = ${name};\n`);
    expect(messages.join('\n')).toMatch(/restricted/);
  });
});
