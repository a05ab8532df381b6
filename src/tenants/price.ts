import type { Admission, TokenUsage } from '../quota/admission';
import type { DeploymentConfig, Price, Provider } from '../types';

/**
 * USD for `usage` at `price` (USD per million tokens), read as the provider reports it: OpenAI's
 * `prompt_tokens` include the cached ones (`cacheRead`), which are priced at `cachedInput`;
 * Claude's `input_tokens` leave out cache reads (`cachedInput`) and cache writes (`cacheWrite`),
 * each priced apart. An absent cache price is the input price.
 *
 * @example
 * ```ts
 * costOf({ input: 2.5, output: 10, cachedInput: 1.25 }, { input: 1000, output: 100, cacheRead: 800 }, 'openai');
 * // (200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6 = 0.0025
 * ```
 */
export function costOf(price: Price, usage: TokenUsage, provider: Provider): number {
  const read = usage.cacheRead ?? 0;
  const write = usage.cacheWrite ?? 0;
  const fresh = provider === 'openai' ? Math.max(0, usage.input - read) : usage.input;
  return (
    (fresh * price.input +
      read * (price.cachedInput ?? price.input) +
      write * (price.cacheWrite ?? price.input) +
      usage.output * price.output) /
    1e6
  );
}

/**
 * USD reserved for a call at admission: its prompt estimate at the input price and its output
 * cap at the output price (no cache discount is assumed: the answer settles it).
 *
 * @example
 * ```ts
 * reservedCost({ input: 2.5, output: 10 }, { input: 1000, output: 256 }); // 0.00506
 * ```
 */
function reservedCost(price: Price, admission: Admission): number {
  return (admission.input * price.input + admission.output * price.output) / 1e6;
}

/**
 * The prices in force: per model on each deployment (its `ModelConfig.pricing`, else
 * `pricing[model]`), and per model the dearest of its deployments, which admission reserves at
 * before the deployment is chosen.
 *
 * @example
 * ```ts
 * const prices = new PriceTable(options.deployments, options.pricing);
 * prices.on('east', 'gpt-4o'); // { input: 2.5, output: 10 }
 * prices.dearest('gpt-4o', { input: 1000, output: 256 }); // USD reserved at admission
 * ```
 */
export class PriceTable {
  /** Per deployment, per model (no key is built per lookup: one is made on every answer). */
  private readonly byDeployment = new Map<string, Map<string, Price>>();
  private readonly byModel = new Map<string, Price[]>();
  /** The models some deployment prices above nothing. */
  private readonly charged = new Set<string>();

  constructor(deployments: readonly DeploymentConfig[], pricing?: Readonly<Record<string, Price>>) {
    for (const d of deployments) {
      for (const m of d.models) {
        const price =
          m.pricing ??
          (pricing !== undefined && Object.prototype.hasOwnProperty.call(pricing, m.name)
            ? pricing[m.name]
            : undefined);
        if (price === undefined) continue;
        let models = this.byDeployment.get(d.name);
        if (models === undefined) this.byDeployment.set(d.name, (models = new Map()));
        models.set(m.name, price);
        let list = this.byModel.get(m.name);
        if (list === undefined) this.byModel.set(m.name, (list = []));
        // Admission reads input and output prices alone: deployments sharing them are one entry.
        if (!list.some((p) => p.input === price.input && p.output === price.output)) {
          list.push(price);
        }
        if (price.input > 0 || price.output > 0) this.charged.add(m.name);
      }
    }
  }

  /** True when no model has a price. */
  get empty(): boolean {
    return this.byDeployment.size === 0;
  }

  /** The price of `model` on `deployment`, if it has one. */
  on(deployment: string, model: string): Price | undefined {
    return this.byDeployment.get(deployment)?.get(model);
  }

  /** True when some deployment prices `model` above nothing (a budget can be spent on it). */
  charges(model: string): boolean {
    return this.charged.has(model);
  }

  /** USD reserved for `admission` on the dearest deployment of `model`; 0 when it has no price. */
  dearest(model: string, admission: Admission): number {
    let most = 0;
    for (const price of this.byModel.get(model) ?? []) {
      const usd = reservedCost(price, admission);
      if (usd > most) most = usd;
    }
    return most;
  }
}
