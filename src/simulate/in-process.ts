import type { SwitchboardOptions } from '../config/switchboard-options';
import type { SwitchboardLogger } from '../types';
import { CLIENT_FETCH } from '../providers/client-fetch';
import { SimulatedUpstream } from '../testing/simulated-upstream';
import { pointAt, simulatedDeployments } from './simulated-deployments';

// Where the clients are pointed until the upstream listens (a loopback name, RFC 6761), swapped
// for the upstream's own origin by each client's fetch.
const PENDING_ORIGIN = 'http://simulated.localhost';

/**
 * A running simulation: the options pointed at it, and how to stop it.
 *
 * @example
 * ```ts
 * const { options, close } = simulateInProcess(configured);
 * ```
 */
export interface Simulation {
  options: SwitchboardOptions;
  close(): Promise<void>;
}

/**
 * A simulation in this process for `options`: a simulated upstream on loopback with one stand-in
 * per deployment, started at once, and the options pointed at it. The switchboard is built from
 * the options returned (synchronously); its clients wait for the upstream on their first request.
 *
 * @example
 * ```ts
 * const simulation = simulateInProcess(options);
 * const sb = new Switchboard(simulation.options);
 * // ...
 * await simulation.close();
 * ```
 */
export function simulateInProcess(
  options: SwitchboardOptions,
  logger?: Pick<SwitchboardLogger, 'log'>,
): Simulation {
  const standIns = simulatedDeployments(options);
  const started = SimulatedUpstream.start({ deployments: standIns.map((s) => s.simulated) });
  // A start that fails is reported by every request that needs it, not as an unhandled rejection.
  started.catch(() => undefined);
  const forward: typeof fetch = async (input, init) => {
    const upstream = await started;
    const url = input instanceof Request ? input.url : String(input);
    const target = url.startsWith(PENDING_ORIGIN)
      ? `${upstream.url}${url.slice(PENDING_ORIGIN.length)}`
      : url;
    return fetch(input instanceof Request ? new Request(target, input) : target, init);
  };
  const deployments = standIns.map((standIn) => {
    const pointed = pointAt(standIn, PENDING_ORIGIN);
    CLIENT_FETCH.set(pointed, forward);
    return pointed;
  });
  logger?.log(
    `Every deployment is simulated in this process (simulate): ${standIns.map((s) => s.config.name).join(', ')}`,
  );
  return {
    options: { ...options, deployments },
    close: async () => {
      const upstream = await started.catch(() => undefined);
      await upstream?.close();
    },
  };
}
