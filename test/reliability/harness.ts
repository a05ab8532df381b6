/**
 * Helpers shared by the reliability suites: a recorder of unhandled rejections, a port nothing
 * listens on, invariants over every model state, and a switchboard built over named simulated
 * deployments (some of which may point at a dead port).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { runInThisContext } from 'node:vm';
import {
  createSwitchboard,
  type DeploymentConfig,
  type Switchboard,
  type SwitchboardOptions,
} from '../../src';
import { SimulatedUpstream } from '../../src/testing';

import { deadPort } from '../support/dead-port';
import { CLAUDE, GPT } from '../support/upstream';

export { CLAUDE, GPT };

/**
 * The host process. Under Jest, `process` is a copy whose listeners never hear the real events;
 * `vm.runInThisContext` evaluates in Node's main context, where `process` is the real one.
 */
export const hostProcess = runInThisContext('process') as NodeJS.Process;

/** Records every `unhandledRejection` and `uncaughtException` of the host process while installed. */
export interface UnhandledRecorder {
  readonly seen: unknown[];
  readonly listener: (reason: unknown) => void;
  dispose(): void;
}

export function recordUnhandled(): UnhandledRecorder {
  const seen: unknown[] = [];
  const record = (reason: unknown) => seen.push(reason);
  hostProcess.on('unhandledRejection', record);
  hostProcess.on('uncaughtException', record);
  return {
    seen,
    listener: record,
    dispose: () => {
      hostProcess.off('unhandledRejection', record);
      hostProcess.off('uncaughtException', record);
    },
  };
}

/**
 * Proves that `recorder` hears an unhandled rejection. Jest's own listener (which would fail the
 * running test) is detached meanwhile.
 */
export async function recorderHearsRejections(recorder: UnhandledRecorder): Promise<boolean> {
  const others = hostProcess.listeners('unhandledRejection').filter((l) => l !== recorder.listener);
  for (const l of others) hostProcess.off('unhandledRejection', l);
  const before = recorder.seen.length;
  try {
    void Promise.reject(new Error('deliberately unhandled'));
    await flushRejections();
    return recorder.seen.length === before + 1;
  } finally {
    recorder.seen.length = before;
    for (const l of others) hostProcess.on('unhandledRejection', l);
  }
}

/** Lets pending rejections surface: unhandled ones are reported after a macrotask turn. */
export async function flushRejections(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Problems with the accounting invariants of every model of every deployment. */
export function invariantViolations(sb: Switchboard): string[] {
  const problems: string[] = [];
  for (const d of sb.deployments.values()) {
    for (const m of d.models.values()) {
      const at = `${d.name}/${m.name}`;
      if (!(m.tpmUsage >= 0)) problems.push(`${at} tpmUsage ${m.tpmUsage}`);
      if (!(m.rpmUsage >= 0)) problems.push(`${at} rpmUsage ${m.rpmUsage}`);
      if (!Number.isFinite(m.util) || m.util < 0) problems.push(`${at} util ${m.util}`);
    }
    for (const [model, s] of Object.entries(sb.stats()[d.name] ?? {})) {
      if (!Number.isFinite(s.util)) problems.push(`${d.name}/${model} stats util ${s.util}`);
      if (/NaN|-/.test(`${s.tpm} ${s.rpm}`)) problems.push(`${d.name}/${model} stats ${s.tpm}`);
    }
  }
  return problems;
}

/** One switchboard deployment: served by a simulated deployment of the same name, or dead. */
export interface Spec {
  name: string;
  provider: 'openai' | 'anthropic';
  /** Point it at a port nothing listens on (connection refused). */
  dead?: boolean;
  cooldown?: number;
  /** Per-request deadline in ms (default 2 000: any answer fits in it on a busy machine). */
  timeout?: number;
  apiKey?: DeploymentConfig['apiKey'];
}

export interface Bench {
  upstream: SimulatedUpstream;
  build(specs: Spec[], options?: Partial<Omit<SwitchboardOptions, 'deployments'>>): Switchboard;
  /** The model state of `name` for the model its provider serves. */
  state(sb: Switchboard, name: string): ReturnType<typeof modelOf>;
  close(): Promise<void>;
}

function modelOf(sb: Switchboard, name: string) {
  const d = sb.deployments.get(name)!;
  return d.models.get(d.provider === 'openai' ? GPT : CLAUDE)!;
}

/**
 * A simulated upstream serving `names`, and a factory of switchboards over it. Every switchboard
 * built is closed by `close()`.
 */
export async function bench(
  names: string[],
  upstreamOptions: { clock?: () => number } = {},
): Promise<Bench> {
  const upstream = await SimulatedUpstream.start({
    deployments: names.map((name) => ({ name })),
    ...upstreamOptions,
  });
  const dead = await deadPort();
  const built: Switchboard[] = [];
  return {
    upstream,
    build(specs, options = {}) {
      const deployments: DeploymentConfig[] = specs.map((s) => {
        const origin = s.dead ? `http://127.0.0.1:${dead}/${s.name}` : undefined;
        const sim = s.dead ? undefined : upstream.deployment(s.name);
        // Uncapped calls charged no reservation: usage is what the answers reported.
        const model = {
          name: s.provider === 'openai' ? GPT : CLAUDE,
          cooldown: s.cooldown,
          outputReservation: 0,
        };
        return s.provider === 'openai'
          ? {
              provider: 'openai',
              name: s.name,
              baseURL: sim?.openaiBaseURL ?? `${origin}/openai/v1/`,
              apiKey: s.apiKey ?? `sk-${s.name}`,
              timeout: s.timeout ?? 2_000,
              models: [model],
            }
          : {
              provider: 'anthropic',
              name: s.name,
              baseURL: sim?.anthropicBaseURL ?? `${origin}/anthropic/`,
              apiKey: s.apiKey ?? `foundry-${s.name}`,
              timeout: s.timeout ?? 2_000,
              models: [model],
            };
      });
      const sb = createSwitchboard({ deployments, ratelimitWindow: 0, ...options });
      built.push(sb);
      return sb;
    },
    state: modelOf,
    async close() {
      await Promise.all(built.map((sb) => sb.close()));
      await upstream.close();
    },
  };
}

export const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: GPT,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

export const message = (content: string, extra: Record<string, unknown> = {}) => ({
  model: CLAUDE,
  max_tokens: 256,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

/** Text of a chat completion or a message, or of every event of a stream of either. */
export async function textOf(result: unknown): Promise<string> {
  const r = result as {
    choices?: Array<{ message: { content: string | null } }>;
    content?: Array<{ type: string; text?: string }>;
  };
  if (r.choices) return r.choices[0]?.message.content ?? '';
  if (r.content) return r.content.map((b) => b.text ?? '').join('');
  let text = '';
  for await (const event of result as AsyncIterable<Record<string, any>>) {
    if (event.choices) text += event.choices[0]?.delta?.content ?? '';
    else if (event.type === 'content_block_delta') text += event.delta?.text ?? '';
  }
  return text;
}

/** Total requests the simulated deployments received. */
export function upstreamRequests(upstream: SimulatedUpstream): number {
  return upstream.deployments.reduce((sum, d) => sum + d.stats.requests, 0);
}

/** The two APIs a switchboard serves, with the SDK whose error classes each raises. */
export const APIS = [
  { api: 'chat', provider: 'openai', sdk: OpenAI, prefix: 'oai' },
  { api: 'messages', provider: 'anthropic', sdk: Anthropic, prefix: 'claude' },
] as const;
export type Api = (typeof APIS)[number];

/** Sends a request body through the switchboard call of `a`'s API. */
export function send(
  sb: Switchboard,
  a: Pick<Api, 'api'>,
  body: object,
  options?: object,
): Promise<unknown> {
  return a.api === 'chat'
    ? sb.chat.completions.create(body as never, options)
    : sb.messages.create(body as never, options);
}
