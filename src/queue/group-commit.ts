/**
 * Group commit: callers add items one at a time and wait for their item to be written; items
 * are written together, one group at a time, when `maxItems` have gathered or `delayMs` after
 * the first of a group (whichever comes first). A group's failure rejects the promises of that
 * group only; the next group is written as usual.
 */
export interface GroupCommit<T> {
  /** Resolves when the group holding `item` is written; rejects with that group's error. */
  add(item: T): Promise<void>;
}

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit<T>(write: (items: T[]) => Promise<void>, options: { maxItems: number; delayMs: number }): GroupCommit<T> {
  const waiting: Waiting<T>[] = [];
  let writing = false;
  let timer: NodeJS.Timeout | undefined;

  async function writeGroups(): Promise<void> {
    if (writing) return;
    writing = true;
    clearTimeout(timer);
    timer = undefined;
    try {
      while (waiting.length > 0) {
        const group = waiting.splice(0, options.maxItems);
        try {
          await write(group.map((entry) => entry.item));
          for (const entry of group) entry.resolve();
        } catch (error) {
          for (const entry of group) entry.reject(error);
        }
      }
    } finally {
      writing = false;
    }
  }

  return {
    add(item) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        // While a group is being written the next one gathers and follows it at once.
        if (writing) return;
        if (waiting.length >= options.maxItems) void writeGroups();
        else timer ??= setTimeout(() => void writeGroups(), options.delayMs);
      });
    },
  };
}
