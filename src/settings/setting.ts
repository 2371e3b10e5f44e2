import * as v from 'valibot';

/**
 * One setting, declared once: its environment variable is the key it is declared under, its
 * schema gives its type and default (the fallback text when unset), `doc` is its line in the
 * README's configuration table. From a group of these come the environment schema
 * (`envSchema`), the README table (`settingsTable`, checked by test/unit/config-docs.test.ts)
 * and the parsed values' type.
 */
export interface Setting<TSchema extends v.GenericSchema = v.GenericSchema> {
  readonly schema: TSchema;
  /** One line of markdown: what the setting does. */
  readonly doc: string;
  /**
   * How the README shows a default that is not a fixed text (it depends on other settings or
   * on the machine). Only for a setting whose schema has no fallback, or an empty one.
   */
  readonly computedDefault?: string;
  /**
   * NODE_ENV=production refuses to start without it (its default is a development value), always
   * or only `with` another setting's value (parsed, defaults applied), e.g. `['SMTP_DELIVERY', 'relay']`.
   */
  readonly requiredInProduction?: true | { readonly with: readonly [string, string] };
}

export function setting<TSchema extends v.GenericSchema>(
  schema: TSchema,
  doc: string,
  more: Pick<Setting, 'computedDefault' | 'requiredInProduction'> = {},
): Setting<TSchema> {
  return { schema, doc, ...more };
}

/** The schemas of a group of settings, by variable name. */
export type SchemasOf<T extends Record<string, Setting>> = { [K in keyof T]: T[K]['schema'] };

export function schemasOf<T extends Record<string, Setting>>(settings: T): SchemasOf<T> {
  return Object.fromEntries(Object.entries(settings).map(([name, declared]) => [name, declared.schema])) as SchemasOf<T>;
}

/** The text a setting takes when unset (its schema's fallback), or undefined. */
export function fallbackOf(declared: Setting): string | undefined {
  return v.getDefault<v.OptionalSchema<v.GenericSchema, string | undefined>>(
    declared.schema as v.OptionalSchema<v.GenericSchema, string | undefined>,
  );
}

/** The README's default cell: the fallback in code style, `*(empty)*`, `unset`, or the computed default's words. */
export function shownDefault(declared: Setting): string {
  if (declared.computedDefault !== undefined) return declared.computedDefault;
  const fallback = fallbackOf(declared);
  if (fallback === undefined) return 'unset';
  return fallback === '' ? '*(empty)*' : `\`${fallback}\``;
}

/** One row of the README's configuration table. */
export function settingRow(name: string, declared: Setting): string {
  const condition = declared.requiredInProduction;
  const required =
    condition === undefined
      ? ''
      : condition === true
        ? ' (*required* in production)'
        : ` (*required* in production with \`${condition.with[0]}=${condition.with[1]}\`)`;
  return `| \`${name}\` | ${shownDefault(declared)} | ${declared.doc}${required} |`;
}

/** The README's table of a group of settings, in declaration order. */
export function settingsTable(settings: Record<string, Setting>): string {
  const rows = Object.entries(settings).map(([name, declared]) => settingRow(name, declared));
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
