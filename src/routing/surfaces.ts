import type { ApiAdapter, Surface } from '../providers/adapter';
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
    const promises = PROVIDERS[adapter.provider].promise;
    const name = `sb.${adapter.path.join('.')}`;
    const entries = new Map<string, CallEntry>();
    for (const [opName, op] of Object.entries(adapter.operations)) {
      entries.set(opName, { adapter, op, surface: name, opName, open: promises.open });
    }
    const entryOf = (op: string): CallEntry => {
      const found = entries.get(op);
      if (found === undefined) throw new SwitchboardError(`${name} has no operation '${op}'`);
      return found;
    };
    return {
      name,
      call: (op, params, options) => promises.over(target.call(entryOf(op), params, options)),
      callHolding: (op, id, body, options) =>
        promises.over(target.callHolding(entryOf(op), id, body, options)),
    };
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
