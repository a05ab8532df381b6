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
export const BUILTIN_ADAPTERS = [chatCompletions, responses, embeddings, messages] as const;
