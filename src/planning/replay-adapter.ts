import { defineAdapter, type ApiPromiseLike } from '../providers/adapter';
import type { Admission, TokenUsage } from '../quota/admission';
import type { Provider } from '../types';

/**
 * The params of one replayed call: its model, its index in the trace, its lane and tenant. No
 * prompt: the replay knows each call's tokens from the trace.
 *
 * @example
 * ```ts
 * const body: ReplayBody = { model: 'gpt-4o', replay: 41, lane: 'batch', tenant: 'nightly' };
 * ```
 */
export interface ReplayBody {
  model: string;
  replay: number;
  lane: 'interactive' | 'batch';
  tenant?: string;
}

/**
 * What answers the replay adapter's calls: the admission charge of call `i`, and its answer from
 * the deployment whose SDK client is `client`.
 *
 * @example
 * ```ts
 * const world: ReplayWorld = { admission: (i) => ({ input: 1_000, output: 300 }), send: (c, m, i) => answerOf(c, m, i) };
 * ```
 */
export interface ReplayWorld {
  admission(i: number, defaultOutput: number): Admission;
  send(client: unknown, model: string, i: number): ApiPromiseLike<unknown>;
}

/** The facade of a replay surface. */
export interface ReplaySurface {
  create(body: ReplayBody): PromiseLike<unknown>;
}

/**
 * An API surface whose calls never leave the process: the switchboard routes, charges, queues
 * and fails them over as any call, and the deployment's answer comes from `world` instead of its
 * SDK client. Answers carry `{ usage: TokenUsage }`.
 *
 * @example
 * ```ts
 * const sb = new Switchboard({ ...options, adapters: [replayAdapter('openai', world)] });
 * ```
 */
export function replayAdapter(provider: Provider, world: ReplayWorld) {
  return defineAdapter<ReplaySurface>()({
    name: `replay.${provider}`,
    path: ['replay', provider],
    provider,
    operations: {
      create: {
        streams: () => false,
        send: (client, body) => world.send(client, body.model as string, body.replay as number),
      },
    },
    admission: (body, defaultOutput) => world.admission(body.replay as number, defaultOutput),
    usage: (data) => (data as { usage: TokenUsage }).usage,
    facade: (surface) => ({ create: (body) => surface.call('create', body) }),
  });
}
