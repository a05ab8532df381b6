import { createSwitchboard, type ModelConfig, type Switchboard } from '../../src';
import type { ModelState } from '../../src/registry/model-state';
import {
  SimulatedUpstream,
  type SimulatedDeployment,
  type SimulatedDeploymentOptions,
} from '../../src/testing';
import { FakeClock } from './random';

/** What {@link oneDeployment} starts: both sides on one clock the test moves. */
export interface OneDeployment {
  clock: FakeClock;
  upstream: SimulatedUpstream;
  sim: SimulatedDeployment;
  sb: Switchboard;
  /** The switchboard's view of the model on the deployment. */
  state: ModelState;
}

/**
 * One simulated deployment and a switchboard that routes to it with a queue (an hour's wait),
 * sharing one fake clock: scenarios that span quota windows run in virtual time.
 *
 * @example
 * ```ts
 * const s = await oneDeployment('anthropic', { rpm: 50, itpm: 30_000 }, { name: CLAUDE, rpm: 50 });
 * ```
 */
export async function oneDeployment(
  provider: 'openai' | 'anthropic',
  simulated: Omit<SimulatedDeploymentOptions, 'name'>,
  model: ModelConfig,
): Promise<OneDeployment> {
  const name = provider === 'openai' ? 'oai0' : 'claude0';
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name, ...simulated }],
  });
  const sim = upstream.deployment(name);
  const sb = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    deployments: [
      provider === 'openai'
        ? { provider, name, baseURL: sim.openaiBaseURL, apiKey: `sk-${name}`, models: [model] }
        : {
            provider,
            name,
            baseURL: sim.anthropicBaseURL,
            apiKey: `foundry-${name}`,
            models: [model],
          },
    ],
  });
  const state = sb.deployments.get(name)!.models.get(model.name)!;
  return { clock, upstream, sim, sb, state };
}
