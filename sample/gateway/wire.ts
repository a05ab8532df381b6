/** Which API a gateway path belongs to, and its error shapes (the relay's own, from the library). */
import { apiErrorBody, apiUpstreamErrorBody, type ApiProblem } from 'nestjs-switchboard/extend';

/** A request the gateway answers with an error of its own, in the API's shape. */
export type Problem = ApiProblem;

/** One API family's error shapes. */
export interface Wire {
  readonly provider: 'openai' | 'anthropic';
  /** The error body for `problem`, as the API sends it. */
  errorBody(problem: Problem): object;
  /** The upstream's own error body when it has the API's shape, else undefined. */
  upstreamErrorBody(error: { error?: unknown }): object | undefined;
}

const wire = (provider: 'openai' | 'anthropic'): Wire => ({
  provider,
  errorBody: (problem) => apiErrorBody(provider, problem),
  upstreamErrorBody: (error) => apiUpstreamErrorBody(provider, error),
});

const OPENAI = wire('openai');
const ANTHROPIC = wire('anthropic');

/** The API family of a path: `/v1/messages…` is Anthropic's, the rest OpenAI's. */
export function apiOf(path: string): 'openai' | 'anthropic' {
  return /^\/v1\/messages(?:[/?]|$)/.test(path) ? 'anthropic' : 'openai';
}

/**
 * The error shapes of the API a path belongs to.
 *
 * @example
 * ```ts
 * wireForPath('/v1/messages').errorBody({ status: 400, message: 'bad' }); // { type: 'error', ... }
 * ```
 */
export function wireForPath(path: string): Wire {
  return apiOf(path) === 'anthropic' ? ANTHROPIC : OPENAI;
}
