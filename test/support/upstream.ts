import type { DeploymentConfig, SwitchboardOptions } from '../../src';
import { createSwitchboard, type Switchboard } from '../../src';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from '../../src/testing';

export const GPT = 'gpt-4o-mini';
export const CLAUDE = 'claude-sonnet-5';

/**
 * The two deployments of a simulated upstream that serves `oai` and `claude`: an OpenAI one for
 * GPT and a Foundry one for CLAUDE, each with `quota`.
 */
export function oaiAndClaude(
  upstream: SimulatedUpstream,
  quota: { tpm: number; rpm: number },
  keys: { oai: string; claude: string | (() => Promise<string>) } = { oai: 'k', claude: 'k' },
): DeploymentConfig[] {
  return [
    {
      provider: 'openai',
      name: 'oai',
      baseURL: upstream.deployment('oai').openaiBaseURL,
      apiKey: keys.oai,
      models: [{ name: GPT, ...quota }],
    },
    {
      provider: 'anthropic',
      name: 'claude',
      baseURL: upstream.deployment('claude').anthropicBaseURL,
      apiKey: keys.claude,
      models: [{ name: CLAUDE, ...quota }],
    },
  ];
}

/** Simulated deployments plus a switchboard pointed at them; `close()` ends both. */
export interface Rig {
  upstream: SimulatedUpstream;
  sb: Switchboard;
  close(): Promise<void>;
}

export interface RigOptions extends Partial<Omit<SwitchboardOptions, 'deployments'>> {
  openai?: number;
  anthropic?: number;
  quota?: { tpm?: number; rpm?: number; outputReservation?: number };
  simulated?: Partial<SimulatedDeploymentOptions>;
  /**
   * The simulated deployments' clock (default: the real one). Pass the switchboard's `clock` too
   * for scenarios that span quota windows in virtual time.
   */
  upstreamClock?: () => number;
  timeout?: number;
}

/** `openai` OpenAI deployments named oai0.. and `anthropic` Foundry deployments named claude0.. */
export async function rig(options: RigOptions = {}): Promise<Rig> {
  const {
    openai = 3,
    anthropic = 0,
    quota = { tpm: 30_000, rpm: 300 },
    simulated,
    upstreamClock,
    timeout,
  } = options;
  const names = [
    ...Array.from({ length: openai }, (_, i) => `oai${i}`),
    ...Array.from({ length: anthropic }, (_, i) => `claude${i}`),
  ];
  const upstream = await SimulatedUpstream.start({
    clock: upstreamClock,
    deployments: names.map((name) => ({ name, ...simulated })),
  });
  const deployments: DeploymentConfig[] = names.map((name) => {
    const sim = upstream.deployment(name);
    return name.startsWith('oai')
      ? {
          provider: 'openai',
          name,
          baseURL: sim.openaiBaseURL,
          apiKey: `sk-${name}`,
          timeout,
          models: [{ name: GPT, ...quota }],
        }
      : {
          provider: 'anthropic',
          name,
          baseURL: sim.anthropicBaseURL,
          apiKey: `foundry-${name}`,
          timeout,
          models: [{ name: CLAUDE, ...quota }],
        };
  });
  const {
    openai: _o,
    anthropic: _a,
    quota: _q,
    simulated: _s,
    upstreamClock: _c,
    timeout: _t,
    ...rest
  } = options;
  const sb = createSwitchboard({ deployments, ratelimitWindow: 0, ...rest });
  return {
    upstream,
    sb,
    close: async () => {
      await sb.close();
      await upstream.close();
    },
  };
}

export const ask = <const E extends object = object>(content: string, extra?: E) => ({
  model: GPT,
  messages: [{ role: 'user' as const, content }],
  ...(extra as E),
});

export const askClaude = <const E extends object = object>(content: string, extra?: E) => ({
  model: CLAUDE,
  max_tokens: 256,
  messages: [{ role: 'user' as const, content }],
  ...(extra as E),
});

/** Requests each simulated deployment received. */
export function requestCounts(upstream: SimulatedUpstream): Record<string, number> {
  return Object.fromEntries(upstream.deployments.map((d) => [d.name, d.stats.requests]));
}
