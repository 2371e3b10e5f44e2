import type { StreamKind } from '../../../db/entities/index.ts';

/** A stream as listed: a built-in one (with its settings row, if any) or a custom one. */
export interface StreamView {
  name: string;
  kind: StreamKind;
  builtIn: boolean;
  description: string;
  dailyCap: number | null;
  sentToday: number;
  createdAt: Date | null;
}

export function serializeStream(stream: StreamView) {
  return {
    name: stream.name,
    kind: stream.kind,
    built_in: stream.builtIn,
    description: stream.description,
    daily_cap: stream.dailyCap,
    sent_today: stream.sentToday,
    created_at: stream.createdAt?.toISOString() ?? null,
  };
}
