import { BUILT_IN_STREAMS, type StreamKind } from '../../../db/entities/index.ts';

/** A stream as a send sees it: its name, its kind and its daily budget. */
export interface ResolvedStream {
  name: string;
  kind: StreamKind;
  dailyCap: number | null;
}

/** Whether `name` is one of the streams every workspace has. */
export const isBuiltInStream = (name: string): name is keyof typeof BUILT_IN_STREAMS => Object.hasOwn(BUILT_IN_STREAMS, name);

/**
 * The kind of stream `name`: a built-in stream's own kind, else the custom stream's stored
 * kind (`storedKind`), or null when the workspace has no stream by that name.
 */
export function streamKindOf(name: string, storedKind: string | null): StreamKind | null {
  if (isBuiltInStream(name)) return name;
  return storedKind === 'transactional' || storedKind === 'broadcast' ? storedKind : null;
}
