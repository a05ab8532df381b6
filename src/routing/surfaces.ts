import type { ApiAdapter, Surface } from '../providers/adapter';
import type { CallPromises } from '../providers/call-promise';
import { PROVIDERS } from '../providers/index';
import type { Answer } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { SwitchboardError } from '../switchboard.error';
import type { CallEntry } from './call-record';

/** Where a surface's calls go: the router's two ways in. */
interface SurfaceTarget {
  call(entry: CallEntry, params: unknown, options: unknown): Promise<Answer>;
  callHolding(
    entry: CallEntry,
    id: unknown,
    body: Record<string, unknown>,
    options: unknown,
  ): Promise<Answer>;
}

/**
 * The surfaces of a switchboard's adapters: `sb.chat.completions.create(...)` is
 * `surface.call('create', ...)`, one {@link CallEntry} per operation, made once.
 *
 * @example
 * ```ts
 * const surfaces = new Surfaces(registry);
 * const chat = surfaces.mount(chatCompletions, router);
 * ```
 */
export class Surfaces {
  /** Adapters with a surface, for the message of a call on the wrong one. */
  private readonly adapters: ApiAdapter[] = [];

  constructor(private readonly registry: DeploymentRegistry) {}

  /** The surface an adapter's facade calls, its calls going to `target`. */
  mount(adapter: ApiAdapter, target: SurfaceTarget): Surface {
    this.adapters.push(adapter);
    return new MountedSurface(adapter, target);
  }

  /** The error of a call of `model` on the surface of `adapter`, which does not serve it. */
  wrongProvider(adapter: ApiAdapter, model: unknown): SwitchboardError {
    const provider = this.registry.models.get(model as string)!;
    const right = this.adapters
      .filter((a) => a.provider === provider)
      .map((a) => `sb.${a.path.join('.')}.create()`);
    return new SwitchboardError(
      `${String(model)} is served by ${provider} deployments only and cannot take a sb.${adapter.path.join('.')} call: use ${right.join(' or ')}`,
    );
  }
}

/**
 * One adapter's surface on one switchboard. Its calls are methods of one class, shared by every
 * switchboard: code optimized for one switchboard's calls serves the next one's, where closures
 * made per switchboard would be new functions for each (and their optimized callers thrown away
 * with the switchboard that made them).
 */
class MountedSurface implements Surface {
  readonly name: string;
  /** One entry per operation, made once. */
  private readonly entries = new Map<string, CallEntry>();
  private readonly promises: CallPromises;

  constructor(
    adapter: ApiAdapter,
    private readonly target: SurfaceTarget,
  ) {
    const promises = PROVIDERS[adapter.provider].promise;
    this.promises = promises;
    this.name = `sb.${adapter.path.join('.')}`;
    for (const [opName, op] of Object.entries(adapter.operations)) {
      this.entries.set(opName, { adapter, op, surface: this.name, opName, open: promises.open });
    }
  }

  call(op: string, params: unknown, options?: unknown): Promise<unknown> {
    return this.promises.over(this.target.call(this.entryOf(op), params, options));
  }

  callHolding(
    op: string,
    id: string,
    body: Record<string, unknown>,
    options?: unknown,
  ): Promise<unknown> {
    return this.promises.over(this.target.callHolding(this.entryOf(op), id, body, options));
  }

  private entryOf(op: string): CallEntry {
    const found = this.entries.get(op);
    if (found === undefined) throw new SwitchboardError(`${this.name} has no operation '${op}'`);
    return found;
  }
}
