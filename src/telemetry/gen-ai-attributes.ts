import type { Attributes, Span } from '@opentelemetry/api';
import { GEN_AI, GEN_AI_VALUES } from './gen-ai-conventions';
import { upstreamCount } from '../runtime/upstream-numbers';

/**
 * Token usage as the GenAI conventions count it: input includes cached input.
 *
 * @example
 * ```ts
 * const usage: GenAiUsage = { inputTokens: 120, outputTokens: 30, cacheReadInputTokens: 100 };
 * ```
 */
export interface GenAiUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
}

/**
 * `azure.ai.openai` for Azure OpenAI endpoints, `openai` for other OpenAI-compatible ones,
 * `anthropic` for Claude (on Foundry too: the API is Anthropic's).
 *
 * @example
 * ```ts
 * providerName('openai', 'https://east.openai.azure.com/openai/v1/'); // 'azure.ai.openai'
 * ```
 */
export function providerName(
  provider: 'openai' | 'anthropic',
  baseURL: string | undefined,
): string {
  if (provider === 'anthropic') return GEN_AI_VALUES.PROVIDER_ANTHROPIC;
  const host = hostOf(baseURL);
  return host !== undefined &&
    /\.(openai\.azure\.com|cognitiveservices\.azure\.com|services\.ai\.azure\.com)$/i.test(host)
    ? GEN_AI_VALUES.PROVIDER_AZURE_OPENAI
    : GEN_AI_VALUES.PROVIDER_OPENAI;
}

/**
 * The usage an SDK reports, counted as the conventions count it. OpenAI: `prompt_tokens` (cached
 * included), `completion_tokens`, `prompt_tokens_details.cached_tokens`. Anthropic:
 * `input_tokens` + cache reads + cache writes, `output_tokens`, and the two cache counts.
 *
 * @example
 * ```ts
 * usageOf('anthropic', { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 5 });
 * // { inputTokens: 100, outputTokens: 5, cacheReadInputTokens: 90 }
 * ```
 */
export function usageOf(provider: 'openai' | 'anthropic', raw: unknown): GenAiUsage | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const u = raw as Record<string, unknown>;
  const out: GenAiUsage = {};
  if (provider === 'openai') {
    const input = upstreamCount(u.prompt_tokens);
    const output = upstreamCount(u.completion_tokens);
    const cached = upstreamCount(
      (u.prompt_tokens_details as { cached_tokens?: unknown } | undefined)?.cached_tokens,
    );
    if (input !== undefined) out.inputTokens = input;
    if (output !== undefined) out.outputTokens = output;
    if (cached !== undefined) out.cacheReadInputTokens = cached;
    return out;
  }
  const read = upstreamCount(u.cache_read_input_tokens);
  const write = upstreamCount(u.cache_creation_input_tokens);
  const input = upstreamCount(u.input_tokens);
  const output = upstreamCount(u.output_tokens);
  if (input !== undefined) out.inputTokens = input + (read ?? 0) + (write ?? 0);
  if (output !== undefined) out.outputTokens = output;
  if (read !== undefined) out.cacheReadInputTokens = read;
  if (write !== undefined) out.cacheCreationInputTokens = write;
  return out;
}

/** The finish reasons of an answer (or of a stream event). */
export function finishReasons(
  provider: 'openai' | 'anthropic',
  r: Record<string, unknown>,
): string[] {
  if (provider === 'anthropic') return typeof r.stop_reason === 'string' ? [r.stop_reason] : [];
  const choices = Array.isArray(r.choices) ? (r.choices as Array<{ finish_reason?: unknown }>) : [];
  return choices.flatMap((c) => (typeof c.finish_reason === 'string' ? [c.finish_reason] : []));
}

/** The HTTP status of an SDK's `APIError`, else the error's class name (`APIConnectionError`). */
export function errorTypeOf(error: unknown): string {
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') return String(status);
  if (error instanceof Error) return error.constructor.name || error.name;
  return '_OTHER';
}

/** `server.address` and `server.port` of a deployment's base URL. */
export function serverAttributes(
  provider: 'openai' | 'anthropic',
  baseURL: string | undefined,
): Attributes {
  const fallback = provider === 'openai' ? 'https://api.openai.com/v1' : undefined;
  const url = parse(baseURL ?? fallback);
  if (url === undefined) return {};
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
  return { [GEN_AI.SERVER_ADDRESS]: url.hostname, [GEN_AI.SERVER_PORT]: port };
}

function hostOf(baseURL: string | undefined): string | undefined {
  return parse(baseURL)?.hostname;
}

function parse(value: string | undefined): URL | undefined {
  if (value === undefined) return undefined;
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** Sets a span attribute only when there is a number to set. */
export function setIfNumber(span: Span, key: string, value: number | undefined): void {
  if (value !== undefined) span.setAttribute(key, value);
}
