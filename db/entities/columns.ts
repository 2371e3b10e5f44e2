import { p } from '@mikro-orm/core';
import { newId } from '../ids.ts';

/** Primary key: 24-hex time-ordered id assigned on create. */
export const idColumn = () =>
  p
    .string()
    .length(24)
    .primary()
    .onCreate(() => newId());

/**
 * Owning workspace of a tenant row; scoped by the `tenant` filter. Indexed on its own unless
 * the entity has a composite index that starts with org_id (`indexed: false`): that one serves
 * the same lookups, and one index fewer is one insertion fewer per row on the hot tables.
 */
export const orgIdColumn = (options: { indexed?: boolean } = {}) => {
  const column = p.string().length(24);
  return options.indexed === false ? column : column.index();
};

/**
 * A new row's created_at and updated_at are one instant: whichever hook runs first reads the
 * clock and the other copies it (two reads of the clock could fall a millisecond apart).
 */
const creationInstant = (other: unknown): Date => (other instanceof Date ? other : new Date());

export const createdAtColumn = () => p.datetime().onCreate((row: { updatedAt?: unknown }) => creationInstant(row.updatedAt));

export const updatedAtColumn = () =>
  p
    .datetime()
    .onCreate((row: { createdAt?: unknown }) => creationInstant(row.createdAt))
    .onUpdate(() => new Date());
