import pg from 'pg';
import { EVENTS_NOTIFY_CHANNEL } from '../../db/entities/index.ts';
import type { Logger } from '../logger.ts';

/**
 * The worker process's one LISTEN connection, for every channel Herald listens on.
 *
 * Queue wake-ups of running drains: a writer NOTIFYs a queue's channel with the owner's id (a
 * webhook endpoint, a sending domain, the inbound actor) in the transaction that writes its
 * rows; the listener pokes the drain of that owner if it runs here (`subscribe`). A drain that
 * is lingering for more work thereby sees new rows within milliseconds, and the writer sends
 * Temporal no signal while the owner's drain lease says it is running (wake-ups cost nothing
 * per item in steady traffic). A lost notification costs latency, never a row: a drain checks
 * its queue before it returns.
 *
 * Whole channels: the events insert trigger notifies `herald_events` with no payload, which
 * wakes the webhook fan-out loop (`subscribeChannel`, used by `src/queue/background-loop.ts`).
 *
 * Every subscriber, owner or channel, is poked once whenever the connection is (re)established:
 * whatever was notified while not listening is looked at.
 */
export const WEBHOOK_WAKE_CHANNEL = 'herald_webhook_wake';
export const SEND_WAKE_CHANNEL = 'herald_send_wake';
/** The payload is the inbound actor's id (one actor owns the whole inbound queue). */
export const INBOUND_WAKE_CHANNEL = 'herald_inbound_wake';
/** The payload is an automation's id (its runs got rows or heard an event). */
export const AUTOMATION_WAKE_CHANNEL = 'herald_automation_wake';
const WAKE_CHANNELS = [WEBHOOK_WAKE_CHANNEL, SEND_WAKE_CHANNEL, INBOUND_WAKE_CHANNEL, AUTOMATION_WAKE_CHANNEL] as const;
/** A channel whose payload names the owner whose queue got rows. */
export type WakeChannel = (typeof WAKE_CHANNELS)[number];
const CHANNELS = [...WAKE_CHANNELS, EVENTS_NOTIFY_CHANNEL] as const;
/** Every channel the listener LISTENs on. */
export type ListenChannel = (typeof CHANNELS)[number];

const RETRY_MS = [500, 1_000, 2_000, 5_000];

export interface QueueWakes {
  /** Calls `onWake` on every notification on `channel` for `ownerId` until the returned function is called. */
  subscribe(channel: WakeChannel, ownerId: string, onWake: () => void): () => void;
  /** Calls `onNotify` on every notification on `channel`, whatever its payload, until the returned function is called. */
  subscribeChannel(channel: ListenChannel, onNotify: () => void): () => void;
  stop(): Promise<void>;
}

/** Listens on its own connection, re-established with backoff when it drops. */
export function startQueueWakes(options: { databaseUrl: string; logger: Logger }): QueueWakes {
  // Keyed `<channel>:<ownerId>` for owners, `<channel>` for whole channels.
  const subscribers = new Map<string, Set<() => void>>();
  let client: pg.Client | null = null;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const pokeAll = () => {
    for (const set of subscribers.values()) for (const onWake of set) onWake();
  };

  async function listen(): Promise<void> {
    if (stopped) return;
    const current = new pg.Client({ connectionString: options.databaseUrl });
    const retry = () => {
      if (client === current) client = null;
      current.removeAllListeners('notification');
      current.end().catch(() => {});
      if (stopped) return;
      const delay = RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]!;
      failures += 1;
      clearTimeout(timer);
      timer = setTimeout(() => void listen(), delay);
    };
    current.on('error', retry);
    current.on('notification', (message) => {
      for (const onNotify of subscribers.get(message.channel) ?? []) onNotify();
      const owners = message.payload ? subscribers.get(`${message.channel}:${message.payload}`) : undefined;
      for (const onWake of owners ?? []) onWake();
    });
    try {
      await current.connect();
      await current.query(CHANNELS.map((channel) => `LISTEN ${channel};`).join(' '));
      client = current;
      failures = 0;
      // Whatever was notified while not listening: every running drain looks once more.
      pokeAll();
    } catch (error) {
      if (failures === 0)
        options.logger.warn('queue wake-ups: LISTEN failed; retrying', { error: error instanceof Error ? error.message : String(error) });
      retry();
    }
  }

  void listen();

  function add(key: string, onWake: () => void): () => void {
    let set = subscribers.get(key);
    if (!set) {
      set = new Set();
      subscribers.set(key, set);
    }
    set.add(onWake);
    return () => {
      set.delete(onWake);
      if (set.size === 0 && subscribers.get(key) === set) subscribers.delete(key);
    };
  }

  return {
    subscribe: (channel, ownerId, onWake) => add(`${channel}:${ownerId}`, onWake),
    subscribeChannel: (channel, onNotify) => add(channel, onNotify),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const current = client;
      client = null;
      current?.removeAllListeners('notification');
      await current?.end().catch(() => {});
    },
  };
}
