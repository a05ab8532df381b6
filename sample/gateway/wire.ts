/** Which API a gateway path belongs to, for error shapes and the requests counter. */
import { apiErrorBody, type ApiProblem } from 'nestjs-switchboard';

/** The API family of a path: `/v1/messages…` is Anthropic's, the rest OpenAI's. */
export function apiOf(path: string): 'openai' | 'anthropic' {
  return /^\/v1\/messages(?:[/?]|$)/.test(path) ? 'anthropic' : 'openai';
}

/**
 * The error shape of the API a path belongs to.
 *
 * @example
 * ```ts
 * wireForPath('/v1/messages').errorBody({ status: 400, message: 'bad' }); // { type: 'error', ... }
 * ```
 */
export function wireForPath(path: string): { errorBody(problem: ApiProblem): object } {
  const provider = apiOf(path);
  return { errorBody: (problem) => apiErrorBody(provider, problem) };
}
