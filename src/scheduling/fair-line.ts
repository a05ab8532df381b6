import { tenantOf } from './tenant-of';

/** What waits in a {@link FairLine}: whose it is, and what serving it costs. */
interface FairItem {
  /**
   * The tenant key; every item of the same tenant shares one turn. `a/b` is a part of tenant `a`
   * and shares `a`'s turn (see {@link tenantOf}).
   */
  readonly tenant: string;
  /** What serving it takes from its tenant's share (tokens of its admission charge); > 0. */
  readonly cost: number;
}

interface SubLine<T> {
  items: T[];
  /** Cost its tenant may still be served this turn (deficit round robin). */
  deficit: number;
  /** Its turn has begun (its quantum was added). */
  turn: boolean;
}

/**
 * One lane of waiting items, fair across tenants by deficit round robin: tenants take turns, and
 * each turn adds a quantum (the largest cost seen, so one turn always serves at least one item)
 * to the tenant's deficit, which pays for its items in order. A tenant of large calls thus gets
 * no more tokens than a tenant of small ones; within a tenant (its parts included, see
 * {@link tenantOf}), first come first served.
 *
 * Memory is bounded by the items waiting: a tenant's sub-line is dropped (with its deficit) as
 * soon as it is empty, so a stream of one-off tenants leaves nothing behind.
 *
 * @example
 * ```ts
 * const line = new FairLine<{ tenant: string; cost: number }>();
 * line.push({ tenant: 'a', cost: 100 });
 * line.push({ tenant: 'b', cost: 100 });
 * const next = line.peek()!; // a's
 * line.take(next);           // served: b's is next
 * ```
 */
export class FairLine<T extends FairItem> {
  /** Tenants with items waiting, in turn order: the first one's turn is now. */
  private readonly tenants = new Map<string, SubLine<T>>();
  private quantum = 1;
  private count = 0;

  /** Items waiting. */
  get size(): number {
    return this.count;
  }

  /** Tenants with items waiting. */
  get tenantCount(): number {
    return this.tenants.size;
  }

  /** Items waiting per tenant id, as the items name it (a tenant's parts apart). */
  byTenant(): Map<string, number> {
    const out = new Map<string, number>();
    for (const sub of this.tenants.values()) {
      for (const item of sub.items) out.set(item.tenant, (out.get(item.tenant) ?? 0) + 1);
    }
    return out;
  }

  /** The oldest item of each tenant, in turn order. */
  *heads(): IterableIterator<T> {
    for (const sub of this.tenants.values()) yield sub.items[0]!;
  }

  push(item: T): void {
    if (item.cost > this.quantum) this.quantum = item.cost;
    const tenant = tenantOf(item.tenant);
    let sub = this.tenants.get(tenant);
    if (sub === undefined) {
      sub = { items: [], deficit: 0, turn: false };
      this.tenants.set(tenant, sub);
    }
    sub.items.push(item);
    this.count++;
  }

  /** The item to serve next, left in place until {@link take}; `undefined` when none waits. */
  peek(): T | undefined {
    for (;;) {
      const first = this.tenants.entries().next();
      if (first.done === true) return undefined;
      const [tenant, sub] = first.value;
      const head = sub.items[0]!;
      if (!sub.turn) {
        sub.deficit += this.quantum;
        sub.turn = true;
      }
      if (sub.deficit >= head.cost) return head;
      // Its turn is over: to the back, deficit kept for its next turn.
      sub.turn = false;
      this.tenants.delete(tenant);
      this.tenants.set(tenant, sub);
    }
  }

  /** `item` (the one {@link peek} returned) was served: its cost comes off its tenant's deficit. */
  take(item: T): void {
    const tenant = tenantOf(item.tenant);
    const sub = this.tenants.get(tenant);
    if (sub === undefined || !this.drop(sub, item)) return;
    sub.deficit -= item.cost;
    if (sub.items.length === 0) this.tenants.delete(tenant);
  }

  /** `item` left without being served; false when it was not waiting. */
  remove(item: T): boolean {
    const tenant = tenantOf(item.tenant);
    const sub = this.tenants.get(tenant);
    if (sub === undefined || !this.drop(sub, item)) return false;
    if (sub.items.length === 0) this.tenants.delete(tenant);
    return true;
  }

  /** Every item, and forget every tenant. */
  clear(): T[] {
    const all: T[] = [];
    for (const sub of this.tenants.values()) all.push(...sub.items);
    this.tenants.clear();
    this.count = 0;
    return all;
  }

  private drop(sub: SubLine<T>, item: T): boolean {
    const i = sub.items.indexOf(item);
    if (i < 0) return false;
    sub.items.splice(i, 1);
    this.count--;
    return true;
  }
}
