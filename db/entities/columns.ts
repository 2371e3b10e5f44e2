import { p } from '@mikro-orm/core';
import { newId } from '../ids.ts';

/** Primary key: 24-hex time-ordered id assigned on create. */
export const idColumn = () => p.string().length(24).primary().onCreate(() => newId());

/** Owning workspace of a tenant row; scoped by the `tenant` filter. */
export const orgIdColumn = () => p.string().length(24).index();

export const createdAtColumn = () => p.datetime().onCreate(() => new Date());

export const updatedAtColumn = () =>
  p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date());
