// Herald's automation builder: shows each field only for its choice (trigger type, condition
// kind, goal, re-entry) and keeps the JSON view in step with the builder. The form works
// without it: the server reads the JSON view when it was changed, else the builder's fields.
// Fields are named as dashboard-automations.builder.ts describes; this assembles them the same way.
(() => {
  const form = document.querySelector('form[data-builder]');
  const json = form && form.querySelector('textarea[name="definition"]');
  const fields = form && form.querySelector('[data-builder-fields]');
  const status = form && form.querySelector('[data-sync-status]');
  if (!form || !json || !fields) return;

  const NAME = /^d\.([^~@]+)(?:~(list|json))?(?:@([^=]+)=(.*))?$/;
  const SEGMENT = /^(?:\d{1,3}|[A-Za-z_][\w-]{0,99})$/;
  const FORBIDDEN = ['__proto__', 'prototype', 'constructor'];
  const isObj = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);

  const valueOf = (as, texts) => {
    if (as === 'list') {
      const kept = texts
        .flatMap((text) => text.split(','))
        .map((item) => item.trim())
        .filter((item) => item !== '');
      return kept.length > 0 ? kept : undefined;
    }
    const text = (texts[0] || '').trim();
    if (text === '') return undefined;
    if (as !== 'json') return text;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };

  const setPath = (root, path, value) => {
    let node = root;
    path.forEach((segment, i) => {
      const key = /^\d+$/.test(segment) ? Number(segment) : segment;
      if (i === path.length - 1) {
        node[key] = value;
        return;
      }
      if (typeof node[key] !== 'object' || node[key] === null) node[key] = /^\d+$/.test(path[i + 1]) ? [] : {};
      node = node[key];
    });
  };

  const compact = (value) => {
    if (Array.isArray(value)) return value.filter((item) => item !== undefined).map(compact);
    if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, compact(item)]));
    return value;
  };

  /** The definition the builder's fields describe. */
  const assemble = () => {
    const values = new Map();
    for (const [name, value] of new window.FormData(form)) {
      if (typeof value === 'string') values.set(name, [...(values.get(name) || []), value]);
    }
    const root = {};
    for (const [name, texts] of values) {
      const match = NAME.exec(name);
      if (!match) continue;
      const path = match[1].split('.');
      if (!path.every((segment) => SEGMENT.test(segment) && !FORBIDDEN.includes(segment))) continue;
      if (match[3] !== undefined && !match[4].split('|').includes((values.get(match[3]) || [''])[0])) continue;
      const value = valueOf(match[2], texts);
      if (value !== undefined) setPath(root, path, value);
    }
    return compact(root);
  };

  const canonical = (value) => {
    if (Array.isArray(value)) return value.map(canonical);
    if (isObj(value))
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, canonical(value[key])]),
      );
    return value;
  };
  const same = (a, b) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

  /** Shows the fields of the chosen trigger type, condition kind, goal and re-entry only. */
  const applyChoices = () => {
    for (const element of fields.querySelectorAll('[data-when]')) {
      const when = element.getAttribute('data-when');
      const at = when.indexOf('=');
      const control = form.elements.namedItem(when.slice(0, at));
      const current = control && 'value' in control ? control.value : '';
      element.hidden = !when
        .slice(at + 1)
        .split('|')
        .includes(current);
    }
  };

  /** While the JSON view has changes the builder does not show, the builder is locked (the JSON is what is sent). */
  const lock = (locked, text) => {
    fields.disabled = locked;
    fields.classList.toggle('stale', locked);
    if (status) status.textContent = text;
  };

  const fromBuilder = () => {
    applyChoices();
    if (fields.disabled) return;
    json.value = JSON.stringify(assemble(), null, 2);
    if (status) status.textContent = 'In step with the builder.';
  };

  const fromJson = () => {
    let parsed;
    try {
      parsed = JSON.parse(json.value);
    } catch {
      lock(true, 'The JSON is not valid yet. The builder is locked until it is, and shows it after “Show in the builder”.');
      return;
    }
    fields.disabled = false;
    if (same(parsed, assemble())) lock(false, 'In step with the builder.');
    else
      lock(
        true,
        'The builder does not show these changes yet: press “Show in the builder” (or just validate or publish: the JSON is what is sent).',
      );
  };

  fields.addEventListener('input', fromBuilder);
  fields.addEventListener('change', fromBuilder);
  json.addEventListener('input', fromJson);
  applyChoices();
  // A JSON view sent back as it was typed (it did not parse) stays what is sent until it is fixed.
  try {
    JSON.parse(json.value);
  } catch {
    lock(true, 'The JSON is not valid yet. The builder is locked until it is, and shows it after “Show in the builder”.');
  }
})();
