import type { MikroORM } from '../../db/orm.ts';
import type { UserRole } from '../../db/entities/index.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';

export interface PageResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * A browser-like client of the dashboard over real HTTP: keeps cookies, does not follow
 * redirects (tests look at them), posts urlencoded forms with the page's CSRF token.
 */
export function dashboardClient(baseUrl: string) {
  const jar = new Map<string, string>();
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');

  async function request(
    method: 'GET' | 'POST',
    path: string,
    options: { form?: Record<string, string | string[]>; headers?: Record<string, string> } = {},
  ): Promise<PageResponse> {
    const body = options.form
      ? new URLSearchParams(
          Object.entries(options.form).flatMap(([k, v]): [string, string][] =>
            Array.isArray(v) ? v.map((one): [string, string] => [k, one]) : [[k, v]],
          ),
        ).toString()
      : undefined;
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(jar.size > 0 ? { cookie: cookieHeader() } : {}),
        ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...options.headers,
      },
      ...(body !== undefined ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name.trim());
      else jar.set(name.trim(), value);
    }
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  return {
    jar,
    get: (path: string, headers?: Record<string, string>) => request('GET', path, headers ? { headers } : {}),
    post: (path: string, form: Record<string, string | string[]>, headers?: Record<string, string>) =>
      request('POST', path, headers ? { form, headers } : { form }),
    /** Opens `path` and posts its form with the CSRF token the page carries (fields added). */
    async submit(
      pagePath: string,
      action: string,
      fields: Record<string, string | string[]>,
      headers?: Record<string, string>,
    ): Promise<PageResponse> {
      const page = await request('GET', pagePath);
      const once = /name="_once" value="([^"]+)"/.exec(page.text)?.[1];
      return this.post(action, { _csrf: csrfOf(page.text), ...(once ? { _once: once } : {}), ...fields }, headers);
    },
  };
}

/** The CSRF token of the first form of a page. */
export function csrfOf(html: string): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error(`no CSRF field in the page:\n${html.slice(0, 500)}`);
  return token;
}

/** A person of `orgId` with a password, through an invitation accepted over HTTP; returns a signed-in client. */
export async function signedInPerson(
  orm: MikroORM,
  baseUrl: string,
  orgId: string,
  options: { email: string; role?: UserRole; password?: string; name?: string },
) {
  const { token } = await createDashboardAuthService({ orm }).invite({ orgId, email: options.email, role: options.role ?? 'member' });
  const client = dashboardClient(baseUrl);
  const password = options.password ?? 'correct horse battery staple';
  const accepted = await client.submit(`/dashboard/invite/${token}`, `/dashboard/invite/${token}`, {
    name: options.name ?? 'Test Person',
    password,
  });
  if (accepted.status !== 303) throw new Error(`invitation not accepted: ${accepted.status}\n${accepted.text.slice(0, 500)}`);
  return { client, password, email: options.email };
}

/** Text of an HTML attribute or element as a browser reads it: numeric and the common named entities decoded, in one pass. */
export function decodeEntities(text: string): string {
  const named: Record<string, string> = { quot: '"', lt: '<', gt: '>', amp: '&', '#39': "'" };
  return text.replace(/&(#\d+|quot|lt|gt|amp);/g, (_m, entity: string) => named[entity] ?? String.fromCharCode(Number(entity.slice(1))));
}
