import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn } from './columns.ts';
import type { UserRole } from './dashboard.ts';

/** A person in a workspace; API keys act on behalf of one (`actor_user_id`). */
export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    email: p.string().length(320),
    name: p.string().length(200),
    /** The dashboard password's argon2id hash; null until the person accepts an invitation. */
    passwordHash: p.string().length(200).nullable(),
    role: p.string().length(16).$type<UserRole>().default('member'),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'email'] }],
});

export class User extends UserSchema.class {}
UserSchema.setClass(User);
