/**
 * `nestjs-switchboard/testing`: a simulated LLM upstream (OpenAI Chat Completions and Anthropic
 * Messages wire formats) with latency, quotas and injectable faults, for tests and demos.
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
  SimulatedDeployment,
  SimulatedUpstream,
  startSimulatedUpstream,
  type SimulatedClientOptions,
  type SimulatedDeploymentOptions,
  type SimulatedDeploymentStats,
  type SimulatedFault,
  type SimulatedRequestRecord,
  type SimulatedUpstreamOptions,
} from './simulated-upstream';
export { sampleJsonSchema, sampleRegex, type JsonSchemaSampleOptions } from './json-schema-sample';
export { estimateTokens } from './wire-common';
export { anthropicErrorBody, anthropicErrorType } from './anthropic-wire';
export { openaiErrorBody } from './openai-wire';
export { seededRandom } from './seeded-random';
