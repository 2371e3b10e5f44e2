import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';

/** A person in a workspace; API keys act on behalf of one (`actor_user_id`). */
export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    email: p.string().length(320),
    name: p.string().length(200),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'email'] }],
});

export class User extends UserSchema.class {}
UserSchema.setClass(User);
