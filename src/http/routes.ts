import type { MikroORM } from '@mikro-orm/postgresql';
import { createContactsRoutes } from '../modules/contacts/contacts.routes.ts';
import { createContactsService } from '../modules/contacts/contacts.service.ts';
import { createMeRoutes } from '../modules/me/me.routes.ts';
import type { CursorCodec } from './cursor.ts';
import type { AnyRoute } from './route.ts';

/** Every operation of the public API, built from the process's shared dependencies. */
export function createRoutes(deps: { orm: MikroORM; cursors: CursorCodec }): AnyRoute[] {
  return [
    ...createMeRoutes(),
    ...createContactsRoutes({ contacts: createContactsService(deps), cursors: deps.cursors }),
  ];
}
