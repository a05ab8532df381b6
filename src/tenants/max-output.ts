import type { DeploymentConfig } from '../types';

/** The output a model whose maximum is not documented here is assumed to write at most. */
export const UNKNOWN_MAX_OUTPUT = 128_000;

/**
 * The vendors' documented maximum output tokens per model family, longest prefix first
 * (OpenAI's and Azure OpenAI's model pages, Anthropic's models overview, betas included: an
 * uncapped answer may run to it, so a budget reserves it).
 */
const DOCUMENTED: readonly (readonly [prefix: string, tokens: number])[] = [
  ['gpt-4o-mini', 16_384],
  ['gpt-4o', 16_384],
  ['gpt-4.1', 32_768],
  ['gpt-4-turbo', 4_096],
  ['gpt-4', 8_192],
  ['gpt-35-turbo', 4_096],
  ['gpt-3.5-turbo', 4_096],
  ['gpt-5', 128_000],
  ['o1-mini', 65_536],
  ['o1', 100_000],
  ['o3', 100_000],
  ['o4-mini', 100_000],
  ['claude-3-haiku', 4_096],
  ['claude-3-opus', 4_096],
  ['claude-3-5', 8_192],
  ['claude-3-7-sonnet', 128_000],
  ['claude-opus-4-5', 64_000],
  ['claude-opus-4', 32_000],
  ['claude-sonnet-4', 64_000],
  ['claude-haiku-4', 64_000],
];

/**
 * The most output tokens `model` may write in one answer, as its vendor documents it;
 * {@link UNKNOWN_MAX_OUTPUT} for a model not listed.
 *
 * @example
 * ```ts
 * documentedMaxOutput('gpt-4o-mini-2024-07-18'); // 16384
 * ```
 */
export function documentedMaxOutput(model: string): number {
  return listed(model) ?? UNKNOWN_MAX_OUTPUT;
}

function listed(model: string): number | undefined {
  for (const [prefix, tokens] of DOCUMENTED) if (model.startsWith(prefix)) return tokens;
  return undefined;
}

/**
 * Per model name, the most output tokens any of its deployments may write: `maxOutput` where
 * configured, else the documented maximum of its name, else of its upstream name (`deployment`), else
 * {@link UNKNOWN_MAX_OUTPUT}.
 *
 * @example
 * ```ts
 * maxOutputs(options.deployments).get('gpt-4o'); // 16384
 * ```
 */
export function maxOutputs(deployments: readonly DeploymentConfig[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const d of deployments) {
    for (const m of d.models) {
      const tokens =
        m.maxOutput ??
        listed(m.name) ??
        (m.deployment === undefined ? undefined : listed(m.deployment)) ??
        UNKNOWN_MAX_OUTPUT;
      out.set(m.name, Math.max(out.get(m.name) ?? 0, tokens));
    }
  }
  return out;
}
