import type { SimulatedDeploymentOptions } from '../testing/simulated-deployment';
import type { SwitchboardOptions } from '../config/switchboard-options';
import type { DeploymentConfig, ModelConfig } from '../types';

/**
 * How a simulation answers: the delay before an answer and between the events of a stream.
 *
 * @example
 * ```ts
 * const pace: SimulationPace = { latency: 50, chunkDelay: 10 };
 * ```
 */
interface SimulationPace {
  /** ms before any answer (default 40). */
  latency?: number;
  /** ms between two events of a streamed answer (default 10). */
  chunkDelay?: number;
}

/**
 * One configured deployment and the simulated deployment that stands in for it: its options, and
 * the path of its base URL under the simulated upstream's origin (`/east/openai/v1/`).
 *
 * @example
 * ```ts
 * const [east] = simulatedDeployments(options);
 * east.simulated.name; // 'east'
 * east.path; // '/east/openai/v1/'
 * ```
 */
export interface SimulatedStandIn {
  config: DeploymentConfig;
  simulated: SimulatedDeploymentOptions;
  path: string;
}

/** What a simulated deployment's name may hold: the first segment of its URLs. */
const INVALID_NAME_CHARS = /[^A-Za-z0-9._~-]+/g;

/**
 * A simulated deployment for each configured one: its quota (the models' limits summed, a
 * simulated deployment having one of each), the vendor whose rules it follows (OpenAI's own API
 * when `baseURL` is absent or api.openai.com, Azure's provisioned rules when a model is
 * `provisioned`, else Azure's standard ones; Claude's on Foundry for `anthropic`), and on Azure
 * the deployment names its models go by on the wire. It accepts any key or Entra ID token.
 *
 * @example
 * ```ts
 * const standIns = simulatedDeployments(loadSwitchboardConfigFile('switchboard.yaml'));
 * const upstream = await SimulatedUpstream.start({ deployments: standIns.map((s) => s.simulated) });
 * ```
 */
export function simulatedDeployments(
  options: Pick<SwitchboardOptions, 'deployments'>,
  pace: SimulationPace = {},
): SimulatedStandIn[] {
  const taken = new Set<string>();
  return options.deployments.map((config, i) => {
    let name = config.name.replace(INVALID_NAME_CHARS, '-').replace(/^[^A-Za-z0-9]+/, '');
    if (name === '' || taken.has(name)) name = `deployment-${i}${name === '' ? '' : `-${name}`}`;
    taken.add(name);
    const wire = config.models.map((m) => m.deployment ?? m.name);
    const simulated: SimulatedDeploymentOptions = {
      name,
      latency: pace.latency ?? 40,
      chunkDelay: pace.chunkDelay ?? 10,
      models: [...new Set(wire)],
      ...summed(config.models),
    };
    if (config.provider === 'anthropic') {
      return { config, simulated, path: `/${name}/anthropic/` };
    }
    if (isOpenAIsOwn(config.baseURL)) {
      return { config, simulated: { ...simulated, rules: 'openai' }, path: `/${name}/v1/` };
    }
    const ptu = config.models.find((m) => m.provisioned === true);
    const rules = ptu === undefined ? ('azure' as const) : ('azure-ptu' as const);
    return {
      config,
      simulated: {
        ...simulated,
        rules,
        ...(ptu?.outputWeight === undefined ? {} : { outputWeight: ptu.outputWeight }),
        deploymentNames: simulated.models,
      },
      path: `/${name}/openai/v1/`,
    };
  });
}

/** Each limit of the models, summed; unlimited (0) when any model leaves it unlimited. */
function summed(
  models: readonly ModelConfig[],
): Pick<SimulatedDeploymentOptions, 'tpm' | 'rpm' | 'itpm' | 'otpm'> {
  const out: Pick<SimulatedDeploymentOptions, 'tpm' | 'rpm' | 'itpm' | 'otpm'> = {};
  for (const limit of ['tpm', 'rpm', 'itpm', 'otpm'] as const) {
    const values = models.map((m) => m[limit] ?? 0);
    if (values.every((v) => v > 0)) out[limit] = values.reduce((a, b) => a + b, 0);
  }
  return out;
}

function isOpenAIsOwn(baseURL: string | undefined): boolean {
  if (baseURL === undefined) return true;
  try {
    return new URL(baseURL).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

/**
 * `config` pointed at its stand-in under `origin`: the base URL replaced (a Foundry `resource`
 * too), a missing key replaced by a placeholder (the SDKs refuse to start without one); a key or
 * token function is kept, as the simulated deployment takes any.
 *
 * @example
 * ```ts
 * const pointed = pointAt(standIn, upstream.url);
 * pointed.baseURL; // 'http://127.0.0.1:41234/east/openai/v1/'
 * ```
 */
export function pointAt(standIn: SimulatedStandIn, origin: string): DeploymentConfig {
  const { config } = standIn;
  const apiKey = config.apiKey ?? 'simulated';
  const baseURL = `${origin}${standIn.path}`;
  if (config.provider === 'anthropic') {
    const { resource: _resource, ...rest } = config;
    return { ...rest, baseURL, apiKey };
  }
  return { ...config, baseURL, apiKey };
}
