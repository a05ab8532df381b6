import type { DeploymentConfig, OpenAIConfig, AnthropicConfig } from '../../src';

/** OpenAI deployments that are never called (selection-only tests). */
export function openaiDeployments(
  n: number,
  model = 'gpt-4o-mini',
  quota: { tpm?: number; rpm?: number } = { tpm: 30_000, rpm: 300 },
): OpenAIConfig[] {
  return Array.from({ length: n }, (_, i) => ({
    provider: 'openai' as const,
    name: `d${i}`,
    baseURL: `http://127.0.0.1:2/d${i}/openai/v1/`,
    apiKey: `sk-test-${i}`,
    models: [{ name: model, ...quota }],
  }));
}

export function anthropicDeployment(name: string, model = 'claude-sonnet-5'): AnthropicConfig {
  return {
    provider: 'anthropic',
    name,
    baseURL: `http://127.0.0.1:2/${name}/anthropic/`,
    apiKey: 'foundry-key',
    models: [{ name: model, tpm: 30_000, rpm: 300 }],
  };
}

export type { DeploymentConfig };
