import type { ApiAdapter, Surface } from './providers/adapter';
import { SwitchboardError } from './switchboard.error';

/** Names that a mounted surface must not take. */
const RESERVED = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * The facades mounted on a switchboard, each at its adapter's path (`sb.chat.completions`), with
 * the intermediate objects (`sb.chat`) it made for them: a path may pass through its own
 * intermediates, never through a name the switchboard already holds.
 *
 * @example
 * ```ts
 * const surfaces = new SwitchboardSurfaces(sb, (adapter) => router.surface(adapter));
 * surfaces.mount(moderations); // sb.moderations
 * surfaces.get(moderations).create({ model: 'omni-moderation-latest', input: 'hi' });
 * ```
 */
export class SwitchboardSurfaces {
  /** Facades by adapter. */
  private readonly facades = new Map<ApiAdapter, object>();
  /** The intermediate objects of mounted paths (`sb.chat`). */
  private readonly branches = new WeakSet<object>();

  constructor(
    private readonly root: object,
    private readonly surfaceOf: (adapter: ApiAdapter) => Surface,
  ) {}

  /** The facade `adapter` mounted; a {@link SwitchboardError} when it is not mounted here. */
  get<Facade extends object>(adapter: ApiAdapter<Facade, never>): Facade {
    const facade = this.facades.get(adapter as ApiAdapter);
    if (facade === undefined) {
      throw new SwitchboardError(
        `The adapter '${adapter.name}' is not mounted on this switchboard: pass it in options.adapters`,
      );
    }
    return facade as Facade;
  }

  /** Mount `adapter`'s facade at its path; a {@link SwitchboardError} when the path is taken. */
  mount(adapter: ApiAdapter): void {
    const where = `sb.${adapter.path.join('.')}`;
    if (adapter.path.length === 0 || adapter.path.some((k) => typeof k !== 'string' || k === '')) {
      throw new SwitchboardError(`Adapter '${adapter.name}' needs a path such as ['moderations']`);
    }
    let node = this.root as Record<string, unknown>;
    adapter.path.forEach((key, i) => {
      const taken = RESERVED.has(key) || key in node;
      if (i === adapter.path.length - 1) {
        if (taken) {
          throw new SwitchboardError(
            `Adapter '${adapter.name}' cannot be mounted at ${where}: that name is taken`,
          );
        }
        const facade = adapter.facade(this.surfaceOf(adapter));
        node[key] = facade;
        this.facades.set(adapter, facade);
        return;
      }
      if (!taken) node[key] = this.branch();
      else if (!this.isBranch(node[key])) {
        throw new SwitchboardError(
          `Adapter '${adapter.name}' cannot be mounted at ${where}: ${key} is taken`,
        );
      }
      node = node[key] as Record<string, unknown>;
    });
  }

  private branch(): object {
    const b = {};
    this.branches.add(b);
    return b;
  }

  private isBranch(value: unknown): boolean {
    return typeof value === 'object' && value !== null && this.branches.has(value);
  }
}
