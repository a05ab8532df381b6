import { entrySize, type CacheEntry } from './cache-entry';

interface Kept {
  entry: CacheEntry;
  bytes: number;
}

/**
 * The entries of one process, bounded by bytes: least recently used go first, an expired entry
 * is dropped when it is next read. A `Map` keeps insertion order; a read moves the entry to its
 * end.
 *
 * @example
 * ```ts
 * const entries = new MemoryEntries(64 * 1024 * 1024);
 * entries.put(entry);
 * entries.get(entry.key, Date.now()); // entry, until it expires
 * ```
 */
export class MemoryEntries {
  private readonly kept = new Map<string, Kept>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held now. */
  get bytes(): number {
    return this.used;
  }

  /** Entries held now. */
  get size(): number {
    return this.kept.size;
  }

  get(key: string, now: number): CacheEntry | undefined {
    const kept = this.kept.get(key);
    if (kept === undefined) return undefined;
    this.kept.delete(key);
    if (kept.entry.expires <= now) {
      this.used -= kept.bytes;
      return undefined;
    }
    this.kept.set(key, kept);
    return kept.entry;
  }

  /** Keeps `entry` (replacing its key's), unless it alone is larger than {@link maxBytes}. */
  put(entry: CacheEntry): void {
    const bytes = entrySize(entry);
    this.drop(entry.key);
    if (bytes > this.maxBytes) return;
    this.kept.set(entry.key, { entry, bytes });
    this.used += bytes;
    for (const [key, oldest] of this.kept) {
      if (this.used <= this.maxBytes) break;
      this.kept.delete(key);
      this.used -= oldest.bytes;
    }
  }

  drop(key: string): void {
    const kept = this.kept.get(key);
    if (kept === undefined) return;
    this.kept.delete(key);
    this.used -= kept.bytes;
  }
}
