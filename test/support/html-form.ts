import { decodeEntities } from './dashboard-client.ts';

const attributes = (tag: string): Map<string, string> =>
  new Map([...tag.matchAll(/\s([\w:-]+)(?:="([^"]*)")?/g)].map((m) => [m[1]!.toLowerCase(), decodeEntities(m[2] ?? '')]));

/**
 * The fields a browser without JavaScript sends for the form of `html` that `formStart` (a
 * regex source of its opening tag) picks: named inputs (checkboxes and radios when checked),
 * each select's selected option (else its first), textareas; in document order, submit
 * buttons left out (add the one pressed). Enough for the dashboard's own server-written HTML.
 */
export function formFields(html: string, formStart = '<form[^>]*data-builder[^>]*>'): [string, string][] {
  const start = new RegExp(formStart).exec(html);
  if (!start) throw new Error(`no form matching ${formStart}`);
  const body = html.slice(start.index + start[0].length, html.indexOf('</form>', start.index));
  const fields: [string, string][] = [];
  for (const match of body.matchAll(/<input\b[^>]*>|<select\b([^>]*)>([\s\S]*?)<\/select>|<textarea\b([^>]*)>([\s\S]*?)<\/textarea>/g)) {
    if (match[0].startsWith('<input')) {
      const attrs = attributes(match[0]);
      const type = attrs.get('type') ?? 'text';
      const name = attrs.get('name');
      if (!name || attrs.has('disabled') || ['submit', 'button', 'reset'].includes(type)) continue;
      if ((type === 'checkbox' || type === 'radio') && !attrs.has('checked')) continue;
      fields.push([name, attrs.get('value') ?? (type === 'checkbox' ? 'on' : '')]);
    } else if (match[1] !== undefined) {
      const name = attributes(match[1]).get('name');
      if (!name) continue;
      const options = [...match[2]!.matchAll(/<option\b([^>]*)>([\s\S]*?)<\/option>/g)].map((o) => ({
        attrs: attributes(o[1]!),
        text: decodeEntities(o[2]!),
      }));
      const chosen = options.find((o) => o.attrs.has('selected')) ?? options[0];
      if (chosen) fields.push([name, chosen.attrs.get('value') ?? chosen.text]);
    } else {
      const name = attributes(match[3]!).get('name');
      // A newline right after <textarea> is not part of its value.
      if (name) fields.push([name, decodeEntities(match[4]!.replace(/^\n/, ''))]);
    }
  }
  return fields;
}

/** `fields` with the values of `changes` in place (a name not there is added at the end). */
export function withFields(fields: readonly [string, string][], changes: Record<string, string>): [string, string][] {
  const out = fields.map(([name, value]): [string, string] => [name, name in changes ? changes[name]! : value]);
  for (const [name, value] of Object.entries(changes)) if (!fields.some(([n]) => n === name)) out.push([name, value]);
  return out;
}
