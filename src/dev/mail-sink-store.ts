import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../logger.ts';

/** A message the sink accepted: its envelope, a few headers and its bytes. */
export interface SinkMessage {
  id: string;
  receivedAt: string;
  mailFrom: string;
  rcptTo: string[];
  sizeBytes: number;
  subject: string | null;
  messageId: string | null;
  raw: Buffer;
}

/** One line of `<dir>/index.jsonl`: a message without its bytes (those are in `<id>.eml`). */
type IndexEntry = Omit<SinkMessage, 'raw'>;

const INDEX_FILE = 'index.jsonl';
const ID = /^[a-f0-9]{24}$/;

export interface SinkStore {
  all(): SinkMessage[];
  get(id: string): SinkMessage | undefined;
  add(message: SinkMessage): void;
  clear(): void;
  /** Called with every message added, after it is stored. */
  onAdd(listener: (message: SinkMessage) => void): () => void;
}

/**
 * The sink's messages in arrival order, in memory and, with a directory, on disk as
 * `<id>.eml` (exact bytes) plus an append-only `index.jsonl` of the metadata, reloaded at
 * start so the viewer still lists yesterday's mail. Index lines whose .eml is gone are skipped.
 */
export function createSinkStore(dir: string | null, logger: Logger): SinkStore {
  const messages: SinkMessage[] = [];
  const listeners = new Set<(message: SinkMessage) => void>();
  if (dir) {
    mkdirSync(dir, { recursive: true });
    messages.push(...load(dir, logger));
  }
  return {
    all: () => [...messages],
    get: (id) => messages.find((m) => m.id === id),
    add(message) {
      if (dir) {
        writeFileSync(join(dir, `${message.id}.eml`), message.raw);
        const { raw: _raw, ...entry } = message;
        appendFileSync(join(dir, INDEX_FILE), JSON.stringify(entry) + '\n');
      }
      messages.push(message);
      for (const listener of listeners) listener(message);
    },
    clear() {
      messages.length = 0;
      if (!dir) return;
      for (const name of readdirSync(dir)) {
        if (name === INDEX_FILE || (name.endsWith('.eml') && ID.test(name.slice(0, -4)))) rmSync(join(dir, name), { force: true });
      }
    },
    onAdd(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function load(dir: string, logger: Logger): SinkMessage[] {
  const index = join(dir, INDEX_FILE);
  if (!existsSync(index)) return [];
  const out: SinkMessage[] = [];
  for (const line of readFileSync(index, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const entry = JSON.parse(line) as IndexEntry;
      if (typeof entry.id !== 'string' || !ID.test(entry.id)) continue;
      const file = join(dir, `${entry.id}.eml`);
      if (!existsSync(file)) continue;
      out.push({ ...entry, raw: readFileSync(file) });
    } catch (error) {
      logger.warn('mail sink: skipped an unreadable index line', { error });
    }
  }
  return out;
}
