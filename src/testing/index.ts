/**
 * `nestjs-switchboard/testing`: a simulated LLM upstream (OpenAI Chat Completions, Responses,
 * Embeddings and Models; Anthropic Messages and token counting) with latency, quotas and
 * injectable faults, for tests and demos.
 *
 * @example
 * ```ts
 * import { startSimulatedUpstream } from 'nestjs-switchboard/testing';
 *
 * const upstream = await startSimulatedUpstream({ deployments: [{ name: 'a' }, { name: 'b' }] });
 * upstream.deployment('b').fail({ kind: 'status', status: 429, retryAfterMs: 100 });
 * // ... point the switchboard at upstream.deployment('a').openaiBaseURL and b's ...
 * await upstream.close();
 * ```
 *
 * @packageDocumentation
 */
export {
  SimulatedUpstream,
  startSimulatedUpstream,
  type SimulatedUpstreamOptions,
} from './simulated-upstream';
export {
  SimulatedDeployment,
  type SimulatedClientOptions,
  type SimulatedDeploymentOptions,
  type SimulatedDeploymentStats,
  type SimulatedPoolLimits,
  type SimulatedRequestRecord,
} from './simulated-deployment';
export type { SimulatedFault } from './faults';
export { estimateTokens } from './wire/common';
export { simulatedEmbedding } from './wire/embeddings';
export { anthropicErrorBody, anthropicErrorType, openaiErrorBody } from './wire/errors';
export { seededRandom } from './seeded-random';
