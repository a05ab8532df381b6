/** Three simulated Azure OpenAI deployments and two Claude ones, and switchboards over them. */
import {
  createSwitchboard,
  type DeploymentConfig,
  type SwitchboardOptions,
  type Switchboard,
} from '../../src';
import { seededRandom, SimulatedUpstream } from '../../src/testing';

export const GPT = 'gpt-4o-mini';
export const EMBED = 'text-embedding-3-small';
export const CLAUDE = 'claude-sonnet-5';
export const OPENAI_NAMES = ['aoai0', 'aoai1', 'aoai2'];
export const CLAUDE_NAMES = ['claude0', 'claude1'];

export async function startUpstream(): Promise<SimulatedUpstream> {
  return SimulatedUpstream.start({
    deployments: [...OPENAI_NAMES, ...CLAUDE_NAMES].map((name) => ({
      name,
      apiKey: `key-${name}`,
    })),
  });
}

export function configs(upstream: SimulatedUpstream, rpm = 10_000): DeploymentConfig[] {
  return [
    ...OPENAI_NAMES.map((name): DeploymentConfig => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: `key-${name}`,
      models: [
        // Uncapped calls charged no reservation: usage is what the answers reported.
        { name: GPT, tpm: 1_000_000, rpm, outputReservation: 0 },
        { name: EMBED, tpm: 1_000_000, rpm: 10_000 },
      ],
    })),
    ...CLAUDE_NAMES.map((name): DeploymentConfig => ({
      provider: 'anthropic',
      name,
      baseURL: upstream.deployment(name).anthropicBaseURL,
      apiKey: `key-${name}`,
      models: [{ name: CLAUDE, tpm: 1_000_000, rpm: 10_000 }],
    })),
  ];
}

export function switchboard(
  upstream: SimulatedUpstream,
  options: Partial<SwitchboardOptions> = {},
  rpm?: number,
): Switchboard {
  return createSwitchboard({
    deployments: configs(upstream, rpm),
    ratelimitWindow: 0,
    failover: { attempts: 3 },
    // Seeded, so that a spec that counts where its calls went does not fail one run in 200 (seven
    // calls over three deployments leave one without a call about that often).
    random: seededRandom(5),
    ...options,
  });
}

/** Requests each simulated deployment received since the last reset, by name (none: left out). */
export function received(upstream: SimulatedUpstream): Record<string, number> {
  return Object.fromEntries(
    upstream.deployments.filter((d) => d.stats.requests > 0).map((d) => [d.name, d.stats.requests]),
  );
}

/** What the switchboard counted: requests and tokens per deployment and model. */
export function counted(sb: Switchboard): Record<string, { requests: number; tokens: number }> {
  const out: Record<string, { requests: number; tokens: number }> = {};
  for (const [name, d] of sb.deployments) {
    for (const [model, s] of d.models) {
      if (s.rpmUsage > 0) out[`${name}/${model}`] = { requests: s.rpmUsage, tokens: s.tpmUsage };
    }
  }
  return out;
}
