import { entrySize, type CacheEntry } from './cache-entry';
import { keptRequest, sameRequest, type KeptRequest, type RequestKey } from './request-print';
import type { ServedEntry } from './served-entry';

/** Entries one request print may find: past it, the oldest is found by its key only. */
const PER_PRINT = 8;

/**
 * One entry held in memory: its size, the request that finds it without its key (see
 * {@link MemoryEntries.byRequest}), and what its hits reuse, made at its first hit.
 *
 * @example
 * ```ts
 * const held = entries.put(entry, request);
 * held.served ??= servedEntry(held.entry, hitOf);
 * ```
 */
export interface Held {
  readonly entry: CacheEntry;
  bytes: number;
  request: KeptRequest | undefined;
  served: ServedEntry | undefined;
}

/**
 * The entries of one process, bounded by bytes: least recently used go first, an expired entry
 * is dropped when it is next read. A `Map` keeps insertion order; a read moves the entry to its
 * end, unless it is there already (a run of hits of one entry moves nothing). Besides its key, an entry may be found by a request it answers, compared member for member
 * with a copy kept beside it: a repeated call finds its answer without building the canonical
 * body and its digest.
 *
 * @example
 * ```ts
 * const entries = new MemoryEntries(64 * 1024 * 1024);
 * entries.put(entry);
 * entries.get(entry.key, Date.now()); // entry, until it expires
 * ```
 */
export class MemoryEntries {
  private readonly kept = new Map<string, Held>();
  /** Entries by the print of a request they answer (a few per print: prints may collide). */
  private readonly requests = new Map<number, Held[]>();
  private used = 0;
  /** The entry last put or read: the end of {@link kept}'s order. */
  private newest: Held | undefined;

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
    return this.held(key, now)?.entry;
  }

  /** The entry under `key`, marked as just used; `undefined` when absent or expired. */
  held(key: string, now: number): Held | undefined {
    return this.fresh(this.kept.get(key), now);
  }

  /** The entry that answers `request`, marked as just used, as {@link held}. */
  byRequest(request: RequestKey, now: number): Held | undefined {
    return this.fresh(this.answering(request), now);
  }

  /**
   * Keeps `entry` (replacing its key's), found also by `request` when given (copied when the call
   * was looked up: the caller may have changed its params since), unless it alone is larger than
   * {@link maxBytes}.
   */
  put(entry: CacheEntry, request?: KeptRequest): Held | undefined {
    this.drop(entry.key);
    const held: Held = {
      entry,
      bytes: entrySize(entry),
      request: undefined,
      served: undefined,
    };
    if (held.bytes > this.maxBytes) return undefined;
    this.kept.set(entry.key, held);
    this.newest = held;
    this.used += held.bytes;
    if (request !== undefined) this.index(held, request);
    this.bound();
    return held;
  }

  /**
   * `held` is found by `request` from now on, instead of by the request it had (one request finds
   * one entry; a body that is not plain JSON data is not kept, see `keptRequest`).
   */
  alias(held: Held, request: RequestKey): void {
    if (this.kept.get(held.entry.key) !== held) return;
    if (held.request !== undefined && sameRequest(held.request, request)) return;
    const kept = keptRequest(request);
    if (kept !== undefined) this.index(held, kept);
  }

  private index(held: Held, kept: KeptRequest): void {
    this.unalias(held);
    const other = this.answering(kept);
    if (other !== undefined) this.unalias(other);
    const found = this.requests.get(kept.print);
    if (found === undefined) this.requests.set(kept.print, [held]);
    else {
      if (found.length >= PER_PRINT) this.unalias(found[0]!);
      found.push(held);
    }
    held.request = kept;
    held.bytes += kept.bytes;
    this.used += kept.bytes;
    this.bound();
  }

  /** Lets every entry go. */
  clear(): void {
    this.kept.clear();
    this.requests.clear();
    this.newest = undefined;
    this.used = 0;
  }

  drop(key: string): void {
    const held = this.kept.get(key);
    if (held === undefined) return;
    this.kept.delete(key);
    if (held === this.newest) this.newest = undefined;
    this.unalias(held);
    this.used -= held.bytes;
  }

  private answering(request: RequestKey): Held | undefined {
    const found = this.requests.get(request.print);
    if (found === undefined) return undefined;
    for (let i = 0; i < found.length; i++) {
      if (sameRequest(found[i]!.request!, request)) return found[i];
    }
    return undefined;
  }

  private fresh(held: Held | undefined, now: number): Held | undefined {
    if (held === undefined) return undefined;
    if (held.entry.expires <= now) {
      this.drop(held.entry.key);
      return undefined;
    }
    if (held !== this.newest) {
      this.kept.delete(held.entry.key);
      this.kept.set(held.entry.key, held);
      this.newest = held;
    }
    return held;
  }

  private unalias(held: Held): void {
    const kept = held.request;
    if (kept === undefined) return;
    const found = this.requests.get(kept.print);
    const at = found?.indexOf(held) ?? -1;
    if (at >= 0) {
      if (found!.length === 1) this.requests.delete(kept.print);
      else found!.splice(at, 1);
    }
    held.bytes -= kept.bytes;
    this.used -= kept.bytes;
    held.request = undefined;
  }

  private bound(): void {
    for (const key of this.kept.keys()) {
      if (this.used <= this.maxBytes) break;
      this.drop(key);
    }
  }
}
