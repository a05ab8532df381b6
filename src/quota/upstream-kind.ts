/**
 * The kinds of upstream whose documented rules the quota follows (docs/quota-counters.md):
 * Azure OpenAI's standard deployments (fixed windows, requests over a short window), OpenAI's own
 * API (token buckets refilled continuously, limits per minute), and Anthropic's (Claude, on
 * Foundry too: input and output buckets).
 *
 * @example
 * ```ts
 * const kind: UpstreamKind = 'azure';
 * ```
 */
export type UpstreamKind = 'azure' | 'openai' | 'anthropic';

/** The hosts of Azure OpenAI and of Azure AI Foundry's OpenAI routes. */
const AZURE_HOST =
  /\.(openai\.azure\.com|cognitiveservices\.azure\.com|services\.ai\.azure\.com)$/i;

/**
 * Which rules a deployment's upstream follows, from its provider and `baseURL`: Anthropic's for
 * `anthropic`; Azure OpenAI's for an Azure host, or a path with an `/openai/` segment (Azure's own
 * `/openai/v1/` and `/openai/deployments/` routes, also behind a proxy or a local simulation);
 * OpenAI's for anything else, the SDK's default `api.openai.com/v1` included.
 *
 * @example
 * ```ts
 * upstreamKind('openai', 'https://east.openai.azure.com/openai/v1/'); // 'azure'
 * upstreamKind('openai', undefined); // 'openai'
 * ```
 */
export function upstreamKind(
  provider: 'openai' | 'anthropic',
  baseURL: string | undefined,
): UpstreamKind {
  if (provider === 'anthropic') return 'anthropic';
  if (baseURL === undefined) return 'openai';
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return 'azure';
  }
  if (AZURE_HOST.test(url.hostname)) return 'azure';
  return url.pathname.split('/').includes('openai') ? 'azure' : 'openai';
}
