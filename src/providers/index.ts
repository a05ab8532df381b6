import type { DeploymentConfig, Provider } from '../types';
import { anthropicProvider } from './anthropic/anthropic-deployment';
import { messages } from './anthropic/messages';
import { chatCompletions } from './openai/chat';
import { embeddings } from './openai/embeddings';
import { openaiProvider } from './openai/openai-deployment';
import { responses } from './openai/responses';
import type { ProviderKit } from './provider-kit';

/** @internal Every provider (SDK) the switchboard can build deployments for. */
export const PROVIDERS: {
  readonly [P in Provider]: ProviderKit<Extract<DeploymentConfig, { provider: P }>>;
} = {
  openai: openaiProvider,
  anthropic: anthropicProvider,
};

/**
 * The API surfaces every switchboard mounts, one adapter each. A new surface is one adapter file
 * and one entry here.
 */
// Typed by name, so the declaration file refers to the adapters' own modules (an inferred type is
// written as `import("..")`, a folder import that ESM resolution refuses).
export const BUILTIN_ADAPTERS: readonly [
  typeof chatCompletions,
  typeof responses,
  typeof embeddings,
  typeof messages,
] = [chatCompletions, responses, embeddings, messages];
