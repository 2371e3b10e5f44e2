import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEV_SETTINGS } from '../../src/settings/dev-settings.ts';
import { SERVER_SETTINGS } from '../../src/settings/server-settings.ts';
import { fallbackOf, settingRow, type Setting } from '../../src/settings/setting.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## Operations\n'));

/** The README's configuration tables: rows by variable name, in order. */
const tables = section
  .split('| variable | default | meaning |\n|---|---|---|\n')
  .slice(1)
  .map((block) => {
    const rows = new Map<string, string>();
    for (const line of block.split('\n')) {
      if (!line.startsWith('|')) break;
      const name = /^\| `([A-Z0-9_]+)` \|/.exec(line)?.[1] ?? line;
      rows.set(name, line);
    }
    return rows;
  });

describe.each([
  ['the services', SERVER_SETTINGS as Record<string, Setting>, 0],
  ['the launcher and dev tooling', DEV_SETTINGS as Record<string, Setting>, 1],
])("README's configuration table of %s", (_label, settings, index) => {
  const rows = tables[index] ?? new Map<string, string>();

  it('has a row for every declared setting', () => {
    const missing = Object.entries(settings).filter(([name]) => !rows.has(name));
    expect(
      missing.map(([name, declared]) => settingRow(name, declared)),
      'add these rows to the README',
    ).toEqual([]);
  });

  it('documents only declared settings', () => {
    expect(
      [...rows.keys()].filter((name) => !(name in settings)),
      'rows of settings that are not declared',
    ).toEqual([]);
  });

  it("shows each setting's default and description as declared, in declaration order", () => {
    const declared = Object.entries(settings).map(([name, setting]) => settingRow(name, setting));
    expect([...rows.values()]).toEqual(declared);
  });
});

describe('setting declarations', () => {
  it.each(Object.entries({ ...SERVER_SETTINGS, ...DEV_SETTINGS }).filter(([, declared]) => declared.computedDefault !== undefined))(
    '%s words its default only because the schema has none',
    (_name, declared) => {
      expect(fallbackOf(declared) ?? '').toBe('');
    },
  );

  it('declares a variable for the tooling or for the services, not both', () => {
    expect(Object.keys(DEV_SETTINGS).filter((name) => name in SERVER_SETTINGS)).toEqual([]);
  });

  it('has one-line descriptions', () => {
    const multiline = Object.entries({ ...SERVER_SETTINGS, ...DEV_SETTINGS }).filter(([, declared]) => /[\n|]/.test(declared.doc));
    expect(multiline.map(([name]) => name)).toEqual([]);
  });
});
